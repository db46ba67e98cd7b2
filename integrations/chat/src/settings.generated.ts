// Generated from chat's manifest.yaml by `npm run generate:settings`: do not edit. A test fails
// when this file and the manifest disagree.

/** The settings of an instance of the chat integration (its keys in config.yaml beside type and name). */
export interface ChatSettings {
  /** What a message that arrives while a turn runs does, unless the conversation or the message says otherwise: steer, followup, collect or interrupt. */
  mode: string;
  /** collect mode: the quiet time after the last message before the collected ones are answered. Milliseconds. */
  collect_window: number;
  /** collect mode: the most messages answered in one turn. */
  collect_max: number;
  /** The most model calls of one turn. */
  max_steps: number;
}
