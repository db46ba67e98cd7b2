/** The outcome of one doctor check, printed as `ok   …`, `warn …` or `FAIL …` with an optional hint. */
export interface DoctorCheck {
  ok: boolean;
  /** A check that passed (`ok: true`) but that the owner should know about: printed as `warn`, exit code 0. */
  warning?: boolean;
  message: string;
  hint?: string;
  /** Extra lines printed indented under the check (the problems of an invalid config). */
  details?: string[];
}

export function formatDoctorCheck(check: DoctorCheck): string {
  const lines = [`${check.ok ? (check.warning === true ? 'warn' : 'ok  ') : 'FAIL'} ${check.message}`];
  for (const detail of check.details ?? []) lines.push(...detail.split('\n').map((line) => `     ${line}`));
  if (check.hint) lines.push(`     hint: ${check.hint}`);
  return lines.join('\n');
}
