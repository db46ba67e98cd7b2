export { type ApplySteeringOptions, applySteering, type SteerableTarget } from './apply-steering.ts';
export {
  type ControlEvent,
  ControlFiles,
  type SteeringAction,
  type SteeringOutcome,
  type SteeringRequest,
  steeringActions,
  steeringRequestSchema,
} from './control-files.ts';
