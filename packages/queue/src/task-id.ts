import { randomBytes } from 'node:crypto';

// Crockford's base32 in lower case: no i, l, o or u, so an id read aloud or retyped survives, and no `_` or `-`,
// which the file name uses as separators.
const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
const timeLength = 10;
const randomLength = 16;
export const taskIdLength = timeLength + randomLength;
export const taskIdPattern = /^[0-9a-hjkmnp-tv-z]{26}$/;

let lastTimeMs = -1;
let lastRandom: number[] = [];

/**
 * A ULID in lower case: 48 bits of milliseconds then 80 random bits. Ids sort by creation time, and ids made in
 * the same millisecond by this process increase (the random part is incremented), so equal-priority tasks with
 * the same ready time still run in the order they were enqueued.
 */
export function newTaskId(nowMs: number = Date.now()): string {
  if (nowMs <= lastTimeMs) {
    increment(lastRandom);
  } else {
    lastTimeMs = nowMs;
    lastRandom = [...randomBytes(randomLength)].map((byte) => byte & 31);
  }
  return encodeTime(lastTimeMs) + lastRandom.map((digit) => alphabet[digit]).join('');
}

/** The creation time an id carries, in milliseconds since the epoch. */
export function taskIdTimeMs(id: string): number {
  let value = 0;
  for (const character of id.slice(0, timeLength)) value = value * 32 + alphabet.indexOf(character);
  return value;
}

function encodeTime(timeMs: number): string {
  let remaining = timeMs;
  let text = '';
  for (let index = 0; index < timeLength; index++) {
    text = alphabet.charAt(remaining % 32) + text;
    remaining = Math.floor(remaining / 32);
  }
  return text;
}

function increment(digits: number[]): void {
  for (let index = digits.length - 1; index >= 0; index--) {
    const digit = digits[index] ?? 0;
    if (digit < 31) {
      digits[index] = digit + 1;
      return;
    }
    digits[index] = 0;
  }
}
