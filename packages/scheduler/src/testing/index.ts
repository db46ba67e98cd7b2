export { FakeClock } from './fake-clock.ts';
