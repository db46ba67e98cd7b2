/**
 * Every stable error code Assistant raises, with the one-line meaning that docs/errors.md documents.
 * A code never changes meaning once released; tests check that each one is documented.
 */
export const errorCodes = {
  CONFIG_INVALID: 'config.yaml or secrets.yaml failed validation; `problems` lists each with file, line and key.',
  CONFIG_NOT_FOUND: 'The config file named by --config, ASSISTANT_CONFIG or ./config.yaml does not exist.',
  USAGE: 'The command line was not understood (unknown command or flag, missing argument).',
  CHILD_EXITED: '`assistant start` stopped because the server or the worker exited.',
} as const;

export type ErrorCode = keyof typeof errorCodes;
