/** Runs async functions with at most `limit` of them in flight; the rest start in the order they were submitted. */
export function createConcurrencyLimit(limit: number): <Result>(run: () => Promise<Result>) => Promise<Result> {
  let active = 0;
  const queued: Array<() => void> = [];

  const startNext = (): void => {
    if (active >= limit) return;
    const start = queued.shift();
    if (start === undefined) return;
    active += 1;
    start();
  };

  return <Result>(run: () => Promise<Result>): Promise<Result> =>
    new Promise<Result>((resolve, reject) => {
      queued.push(() => {
        run()
          .then(resolve, reject)
          .finally(() => {
            active -= 1;
            startNext();
          });
      });
      startNext();
    });
}
