/**
 * What a `!yolo` tag leaves in the parsed data: the tagged value, marked as a deliberate override of the
 * approval that an irreversible action would otherwise need. The action schema unwraps it into `yolo: true`.
 */
export class Yolo {
  readonly value: unknown;
  constructor(value: unknown) {
    this.value = value;
  }
}
