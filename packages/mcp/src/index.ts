export * from './server/index.ts';
