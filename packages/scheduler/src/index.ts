export {
  type BreakerState,
  type CircuitBreakerSettings,
  CircuitBreakers,
  type CircuitBreakersOptions,
  circuitBreakerFolder,
  type ScheduledRunPermission,
} from './circuit-breakers.ts';
export { type Clock, systemClock } from './clock.ts';
export {
  type ScheduledJob,
  type ScheduledJobStatus,
  type ScheduledRun,
  type ScheduledRunReason,
  Scheduler,
  type SchedulerOptions,
  scheduleFolder,
} from './scheduler.ts';
