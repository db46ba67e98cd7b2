import v8 from 'node:v8';
for (const spec of process.argv.slice(2)) await import(spec);
globalThis.gc?.();
await new Promise((r) => setTimeout(r, 300));
const m = process.memoryUsage();
const f = (n: number) => `${(n / 2 ** 20).toFixed(1)}`;
console.log(process.argv.slice(2).join(' '), 'rss', f(m.rss), 'heapTotal', f(m.heapTotal), 'heapUsed', f(m.heapUsed), 'external', f(m.external), 'arrayBuffers', f(m.arrayBuffers));
for (const s of v8.getHeapSpaceStatistics()) console.log('  ', s.space_name, f(s.space_size), f(s.space_used_size));
const hs = v8.getHeapStatistics(); console.log('   code+metadata', f(hs.total_heap_size), 'malloced', f(hs.malloced_memory), 'peakmalloced', f(hs.peak_malloced_memory));
