export {
  addToHistory,
  appendHistory,
  emptyHistory,
  type HistoryBucket,
  type HistoryEvent,
  type HistoryFile,
  HistoryRecorder,
  type HistorySeries,
  type HistoryWindow,
  historyFile,
  historyRings,
  historySeries,
  maxKeysPerBucket,
  otherKey,
  readHistory,
} from './history-series.ts';
export {
  heldLanes,
  type LlmStage,
  type ModelSummary,
  type PublishedModels,
  parsePublishedModels,
  summarizeModels,
} from './model-metrics.ts';
export { type PublishedBreaker, parsePublishedBreakers } from './published-breakers.ts';
export {
  durationBucketsSeconds,
  type MetricsSnapshot,
  mergeSnapshots,
  metricsSnapshotSchema,
  parseSnapshots,
  type RejectionReason,
  type RenderPrometheusOptions,
  readMetricsFiles,
  rejectionReasons,
  renderPrometheus,
  TaskMetrics,
  type TaskOutcomeName,
  taskOutcomes,
  writeMetricsFile,
} from './task-metrics.ts';
export { parseWorkerProcesses, type WorkerProcess, workerProcess } from './worker-process.ts';
