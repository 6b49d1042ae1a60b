// ONNX Runtime's time per node, to set beside `kiln-run --profile` (which names kiln's launches
// by the ONNX nodes they fuse): runs MODEL REPEAT times on one thread with ORT's profiler on and
// prints, per node, its median kernel time in microseconds, largest first, with the op totals.
// usage: node ort_profile.js ORT_MODULE_DIR MODEL THREADS REPEAT NAME=FILE.npy...
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { readNpy } = require('./ort_bench.js');

async function main() {
  const [moduleDir, model, threadsArg, repeatArg, ...inputs] = process.argv.slice(2);
  if (!inputs.length) throw new Error('usage: ort_profile.js ORT_MODULE_DIR MODEL THREADS REPEAT NAME=FILE.npy...');
  const ort = require(path.join(moduleDir, 'node_modules', 'onnxruntime-node'));
  const feeds = {};
  for (const spec of inputs) {
    const eq = spec.indexOf('=');
    const a = readNpy(spec.slice(eq + 1));
    feeds[spec.slice(0, eq)] = new ort.Tensor(a.type, a.data, a.shape);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-'));
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: Number(threadsArg),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableProfiling: true,
    profileFilePrefix: path.join(dir, 'profile'),
  });
  for (let i = 0; i < Number(repeatArg); ++i) await session.run(feeds);
  session.endProfiling();
  const file = fs.readdirSync(dir).filter((f) => f.endsWith('.json'))[0];
  const events = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  fs.rmSync(dir, { recursive: true });
  const perNode = new Map();  // name -> {op, durations}
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!perNode.has(name)) perNode.set(name, { op: e.args.op_name, dur: [] });
    perNode.get(name).dur.push(e.dur);
  }
  const rows = [...perNode].map(([name, v]) => {
    v.dur.sort((a, b) => a - b);
    return { name, op: v.op, us: v.dur[v.dur.length >> 1] };
  });
  rows.sort((a, b) => b.us - a.us);
  const byOp = new Map();
  let total = 0;
  for (const r of rows) {
    byOp.set(r.op, (byOp.get(r.op) || 0) + r.us);
    total += r.us;
  }
  console.log(`total_us: ${total} (medians of ${repeatArg} runs, per node)`);
  for (const [op, us] of [...byOp].sort((a, b) => b[1] - a[1])) console.log(`op ${op}: ${us} us`);
  for (const r of rows) console.log(`${String(r.us).padStart(8)} us  ${r.op.padEnd(18)} ${r.name}`);
}

main().catch((e) => {
  console.error(`ort_profile: ${e.message}`);
  process.exit(1);
});
