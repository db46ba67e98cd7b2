const spec = process.argv[2]!;
const before = process.memoryUsage().rss;
if (spec !== 'none') await import(spec);
globalThis.gc?.();
await new Promise((r) => setTimeout(r, 200));
const status = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8').match(/VmRSS:\s+(\d+)/)![1];
console.log(`${spec.padEnd(40)} ${(Number(status) / 1024).toFixed(0)} MB (+${((process.memoryUsage().rss - before) / 2 ** 20).toFixed(0)})`);
