// ONNX Runtime side of tools/bench/run_benchmarks.py: loads MODEL with onnxruntime-node (CPU),
// runs it on .npy inputs with a given number of intra-op threads, and prints
//   session_ms: X        (session creation, load to ready-to-run)
//   latency_ms: min=X median=Y
// then writes the first output as OUT.npy (float32 or int64) for the comparison with kiln.
// usage: node ort_bench.js ORT_MODULE_DIR MODEL THREADS REPEAT OUT.npy NAME=FILE.npy...
'use strict';
const fs = require('fs');
const path = require('path');

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const data = buf.subarray(hstart + hlen);
  const copy = new Uint8Array(data).buffer;  // aligned
  if (descr === '<f4') return { type: 'float32', shape, data: new Float32Array(copy) };
  if (descr === '<i8') return { type: 'int64', shape, data: new BigInt64Array(copy) };
  if (descr === '<i4') return { type: 'int32', shape, data: new Int32Array(copy) };
  throw new Error(`${file}: dtype ${descr} is not supported here`);
}

function writeNpy(file, tensor) {
  const descr = tensor.type === 'float32' ? '<f4' : tensor.type === 'int64' ? '<i8' : null;
  if (!descr) throw new Error(`output type ${tensor.type} is not supported here`);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${tensor.dims.join(', ')}${tensor.dims.length === 1 ? ',' : ''}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

async function main() {
  const [moduleDir, model, threadsArg, repeatArg, outFile, ...inputs] = process.argv.slice(2);
  const ort = require(path.join(moduleDir, 'node_modules', 'onnxruntime-node'));
  const threads = Number(threadsArg), repeat = Number(repeatArg);
  const feeds = {};
  for (const spec of inputs) {
    const eq = spec.indexOf('=');
    const a = readNpy(spec.slice(eq + 1));
    feeds[spec.slice(0, eq)] = new ort.Tensor(a.type, a.data, a.shape);
  }
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const sessionMs = Number(process.hrtime.bigint() - t0) / 1e6;
  let out = await session.run(feeds);  // warm-up
  for (let i = 0; i < 3; ++i) out = await session.run(feeds);
  const times = [];
  for (let i = 0; i < repeat; ++i) {
    const s = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  times.sort((a, b) => a - b);
  const median = repeat % 2 ? times[(repeat - 1) / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]);
  console.log(`session_ms: ${sessionMs.toFixed(3)}`);
  console.log(`latency_ms: min=${times[0].toFixed(4)} median=${median.toFixed(4)}`);
  writeNpy(outFile, out[session.outputNames[0]]);
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`ort_bench: ${e.message}`);
    process.exit(1);
  });
}

module.exports = { readNpy };  // for tools/bench/ort_profile.js
