import { checkBubblewrap } from '@assistant/sandbox';

/** The one command that makes the sandbox tests runnable; CI's `.ci/run` installs the same package. */
const bubblewrapInstallCommand = 'apt-get install -y --no-install-recommends bubblewrap';

/**
 * Resolves when bubblewrap works on this machine; otherwise throws, never skips: a test of the sandbox should fail
 * loudly where there is none. In CI (`CI=true`) a missing bubblewrap means `.ci/run` did not install it; locally the
 * error says how to install it.
 */
export async function requireBubblewrap(): Promise<void> {
  const status = await checkBubblewrap();
  if (status.usable) return;
  const where =
    process.env.CI === 'true'
      ? 'CI installs it in .ci/run, so this machine is not set up as CI expects'
      : 'this test needs a working bubblewrap';
  throw new Error(
    `bubblewrap does not work here (${status.problem}); ${where}: install it with ${bubblewrapInstallCommand} ` +
      '(as root, after apt-get update)',
  );
}
