export { type ApplySteeringOptions, applySteering, type SteerableTarget } from './apply-steering.ts';
export { ControlFiles } from './control-files.ts';
export { HttpSteeringChannel, type HttpSteeringChannelOptions } from './http-steering-channel.ts';
export type {
  NewSteeringRequest,
  PendingSteeringRequest,
  SteeringChannel,
  WatchedRequests,
} from './steering-channel.ts';
export {
  type ControlEvent,
  type SteeringAction,
  type SteeringOutcome,
  type SteeringRequest,
  type SteeringSettlement,
  steeringActions,
  steeringRequestIdPattern,
  steeringRequestSchema,
} from './steering-request.ts';
