// wasm-order.mjs IN OUT: names the functions of a wasm module so that `wasm-opt --reorder-functions-by-name`
// lays out similar bodies next to each other, which is what gzip's 32 KiB window can use: monomorphised
// copies of one generic (serde visitors, yew components, sorts) end up side by side instead of scattered.
// The data segments are put in order too, the most compressible (text) first and tables of numbers last.
// Nothing but the order of the code and data sections changes; `wasm-opt --strip-debug` then drops the names.
//
// Similarity is estimated with MinHash over the bodies' 4-byte shingles; the order is a greedy
// nearest-neighbour chain starting from the largest body. Deterministic: same input, same output.
import { readFileSync, writeFileSync } from 'node:fs';
import { deflateRawSync } from 'node:zlib';

const [, , input, output] = process.argv;
if (!input || !output) {
  console.error('usage: node scripts/wasm-order.mjs IN.wasm OUT.wasm');
  process.exit(2);
}
const buf = readFileSync(input);
if (buf.readUInt32LE(0) !== 0x6d736100 || buf.readUInt32LE(4) !== 1) throw new Error(`${input}: not a wasm module`);

let pos = 8;
const uleb = () => {
  let result = 0;
  let shift = 0;
  let byte;
  do {
    byte = buf[pos++];
    result += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return result;
};
const skipName = () => {
  const n = uleb();
  pos += n;
};
const sleb = () => {
  let result = 0;
  let shift = 0;
  let byte;
  do {
    byte = buf[pos++];
    result += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  if (byte & 0x40) result -= 2 ** shift;
  return result;
};
const skipLimits = () => {
  const flags = buf[pos++];
  uleb();
  if (flags & 1) uleb();
};

// Sections, the number of imported functions (they come first in the function index space) and the bodies.
const sections = [];
let imported = 0;
const bodies = [];
let segments = [];
let dataSection = -1;
while (pos < buf.length) {
  const start = pos;
  const id = buf[pos++];
  const size = uleb();
  const body = pos;
  pos = body + size;
  let name = '';
  if (id === 0) {
    const save = pos;
    pos = body;
    const n = uleb();
    name = buf.subarray(pos, pos + n).toString('latin1');
    pos = save;
  }
  sections.push({ start, end: body + size, id, name });
  const end = pos;
  if (id === 2) {
    pos = body;
    for (let i = 0, n = uleb(); i < n; i++) {
      skipName();
      skipName();
      const kind = buf[pos++];
      if (kind === 0) {
        uleb();
        imported++;
      } else if (kind === 1) {
        pos++; // reftype
        skipLimits();
      } else if (kind === 2) {
        skipLimits();
      } else if (kind === 3) {
        pos += 2; // valtype, mutability
      } else if (kind === 4) {
        pos++;
        uleb();
      } else {
        throw new Error(`unknown import kind ${kind}`);
      }
    }
  } else if (id === 11) {
    pos = body;
    dataSection = sections.length - 1;
    for (let i = 0, n = uleb(); i < n; i++) {
      const segStart = pos;
      const flags = uleb();
      let offset = -1;
      if (flags === 0 && buf[pos] === 0x41) {
        pos++; // i32.const
        offset = sleb();
        if (buf[pos++] !== 0x0b) offset = -1; // not a lone constant: leave the section as it is
      }
      if (offset < 0) {
        segments = null; // passive or unusual segment: leave the data section as it is
        break;
      }
      const len = uleb();
      segments.push({ raw: buf.subarray(segStart, pos + len), offset, len, bytes: buf.subarray(pos, pos + len) });
      pos += len;
    }
  } else if (id === 10) {
    pos = body;
    for (let i = 0, n = uleb(); i < n; i++) {
      const len = uleb();
      bodies.push(buf.subarray(pos, pos + len));
      pos += len;
    }
  }
  pos = end;
}

// MinHash signatures.
const K = 256;
const seeds = Uint32Array.from({ length: K }, (_, k) => (Math.imul(k + 1, 0x9e3779b1) ^ 0x85ebca6b) >>> 0);
const signatures = bodies.map((b) => {
  const sig = new Uint32Array(K).fill(0xffffffff);
  for (let i = 0; i + 4 <= b.length; i++) {
    let shingle = 0x811c9dc5; // FNV-1a of the 4 bytes
    for (let q = 0; q < 4; q++) shingle = Math.imul(shingle ^ b[i + q], 16777619) >>> 0;
    for (let k = 0; k < K; k++) {
      let x = Math.imul(shingle ^ seeds[k], 0x85ebca6b);
      x ^= x >>> 13;
      x = Math.imul(x, 0xc2b2ae35) >>> 0;
      x = (x ^ (x >>> 16)) >>> 0;
      if (x < sig[k]) sig[k] = x;
    }
  }
  return sig;
});

// Greedy chain: from the largest body, always on to the most similar body not yet placed (ties: the larger).
const n = bodies.length;
const placed = new Uint8Array(n);
const rank = new Array(n);
let current = 0;
for (let i = 1; i < n; i++) if (bodies[i].length > bodies[current].length) current = i;
for (let step = 0; step < n; step++) {
  placed[current] = 1;
  rank[current] = step;
  const a = signatures[current];
  let best = -1;
  let bestScore = -1;
  for (let j = 0; j < n; j++) {
    if (placed[j]) continue;
    const b = signatures[j];
    let score = 0;
    for (let k = 0; k < K; k++) if (a[k] === b[k]) score++;
    if (score > bestScore || (score === bestScore && bodies[j].length > bodies[best].length)) {
      bestScore = score;
      best = j;
    }
  }
  if (best < 0) break;
  current = best;
}

// A "name" section with only function names, encoding the order; any existing one is replaced.
const bytes = [];
const putUleb = (out, v) => {
  do {
    let byte = v & 0x7f;
    v = Math.floor(v / 128);
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
};
const putString = (out, s) => {
  const b = Buffer.from(s, 'latin1');
  putUleb(out, b.length);
  for (const x of b) out.push(x);
};
const names = [];
putUleb(names, imported + n);
for (let i = 0; i < imported; i++) {
  putUleb(names, i);
  putString(names, `i${String(i).padStart(6, '0')}`);
}
for (let i = 0; i < n; i++) {
  putUleb(names, imported + i);
  putString(names, `f${String(rank[i]).padStart(6, '0')}`);
}
putString(bytes, 'name');
bytes.push(1); // function names subsection
putUleb(bytes, names.length);
const payload = Buffer.concat([Buffer.from(bytes), Buffer.from(names)]);
const header = [0];
putUleb(header, payload.length);

// Data segments: active ones at constant offsets that do not overlap can be written in any order.
let dataBytes = null;
if (segments && segments.length > 1) {
  const byOffset = [...segments].sort((a, b) => a.offset - b.offset);
  const overlap = byOffset.some((seg, i) => i > 0 && byOffset[i - 1].offset + byOffset[i - 1].len > seg.offset);
  if (!overlap) {
    const ratio = (seg) => deflateRawSync(seg.bytes, { level: 9 }).length / Math.max(1, seg.len);
    const keyed = segments.map((seg, i) => ({ seg, i, r: ratio(seg) }));
    keyed.sort((a, b) => a.r - b.r || a.i - b.i);
    const count = [];
    putUleb(count, segments.length);
    const payload = Buffer.concat([Buffer.from(count), ...keyed.map((k) => k.seg.raw)]);
    const header = [11];
    putUleb(header, payload.length);
    dataBytes = Buffer.concat([Buffer.from(header), payload]);
  }
}
const kept = sections
  .filter((s) => !(s.id === 0 && s.name === 'name'))
  .map((s) => (s === sections[dataSection] && dataBytes ? dataBytes : buf.subarray(s.start, s.end)));
writeFileSync(output, Buffer.concat([buf.subarray(0, 8), ...kept, Buffer.from(header), payload]));
