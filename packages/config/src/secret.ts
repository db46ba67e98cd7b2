import { inspect } from 'node:util';
import { registerSecretValue } from '@assistant/errors';

const hidden = new WeakMap<Secret, string>();

/**
 * A value from secrets.yaml (or a secret field written inline). It prints as `[secret name]` in logs, JSON,
 * task files and `util.inspect`, so passing config around cannot leak it; code that needs the value calls
 * `reveal()` at the point of use.
 */
export class Secret {
  /** The name in secrets.yaml, or `inline` for a value written directly in config.yaml. */
  readonly name: string;

  constructor(name: string, value: string) {
    this.name = name;
    hidden.set(this, value);
    // Anything this process writes from now on is scrubbed of the value (see scrubSecrets).
    registerSecretValue(value);
  }

  /** The secret value. Call it where the value is used, never to log or store it. */
  reveal(): string {
    return hidden.get(this) ?? '';
  }

  /** True when the secret is present and not blank. */
  get isSet(): boolean {
    return this.reveal().trim() !== '';
  }

  toString(): string {
    return `[secret ${this.name}]`;
  }

  toJSON(): string {
    return this.toString();
  }

  [inspect.custom](): string {
    return this.toString();
  }
}
