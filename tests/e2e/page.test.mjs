// End-to-end: serves dist/ on 127.0.0.1, drives it in Debian's Chromium through Playwright like a user:
// open, pick a model and a GPU, change the batch size, take the link, open it in a new page, compare.
// Screenshots (light, dark, phone width) go to tests/e2e/out/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile, mkdir } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');
const DIST = new URL('../../dist/', import.meta.url).pathname;
const OUT = new URL('./out/', import.meta.url).pathname;
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml' };

let server, browser, base;

before(async () => {
  await mkdir(OUT, { recursive: true });
  server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^\/+/, '');
    try {
      const body = await readFile(join(DIST, path === '' ? 'index.html' : path));
      res.writeHead(200, { 'content-type': TYPES[extname(path)] || 'text/html' });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

test('a user picks a setup, shares the link, and the link restores it', async () => {
  const context = await browser.newContext({ locale: 'en-US' });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  const started = Date.now();
  await page.goto(base);
  await page.waitForSelector('#verdict');
  console.log(`first full render: ${Date.now() - started} ms`);
  await page.selectOption('#model', 'qwen2.5-7b');
  await page.selectOption('#gpu', 'rtx-3090');
  await page.fill('#batch', '8');
  await page.waitForFunction(() => location.search.includes('batch=8'));
  // The LoRA checkboxes and the batch-length choice reach the link (and come back from it below).
  await page.check('#lora-dora');
  await page.waitForFunction(() => location.search.includes('dora=1'));
  await page.selectOption('#shapes', 'fixed');
  await page.waitForFunction(() => location.search.includes('varlen=0'));
  const verdict = await page.textContent('#verdict');
  const table = await page.textContent('#breakdown');
  assert.match(verdict, /GiB/);
  const link = page.url();
  assert.match(link, /model=qwen2.5-7b/);
  assert.match(link, /gpu=rtx-3090/);
  await page.screenshot({ path: join(OUT, 'light.png'), fullPage: true });
  // This browser has no WebGPU: no hint, and no error either.
  assert.equal(await page.locator('#webgpu-hint').count(), 0);
  // The JavaScript API on the page.
  const api = await page.evaluate(() => {
    const e = window.vramfit.estimate({ model: 'llama-3.1-8b', mode: 'qlora', micro_batch: 1 });
    let thrown = '';
    try { window.vramfit.estimate({ seq_len: 'long' }); } catch (err) { thrown = err.message; }
    return { total: e.device_total, need: e.fit_need, parts: e.gpu.length, thrown };
  });
  assert.ok(api.total > 4 * 2 ** 30 && api.parts > 3, JSON.stringify(api));
  assert.ok(api.need > 4 * 2 ** 30 && api.need <= api.total, JSON.stringify(api));
  assert.match(api.thrown, /seq_len/);
  assert.deepEqual(problems, []);

  const fresh = await browser.newContext({ locale: 'en-US' });
  const other = await fresh.newPage();
  await other.goto(link);
  await other.waitForSelector('#verdict');
  assert.equal(await other.textContent('#verdict'), verdict);
  assert.equal(await other.textContent('#breakdown'), table);
  assert.equal(await other.inputValue('#batch'), '8');
  assert.ok(await other.isChecked('#lora-dora'));
  assert.equal(await other.inputValue('#shapes'), 'fixed');
  await fresh.close();
  await context.close();
});

test('an older transformers release, picked under advanced settings, moves the inference figure and reaches the link', async () => {
  const page = await browser.newPage({ locale: 'en-US' });
  await page.goto(`${base}?v=1&mode=inference&prompt=8192&new=16`);
  await page.waitForSelector('#verdict');
  const gib = (text) => Number(text.match(/([\d.]+) GiB/)[1]);
  const before = await page.textContent('#verdict');
  await page.locator('details:has(#tf) > summary').click();
  await page.selectOption('#tf', '4.44');
  await page.waitForFunction(() => location.search.includes('tf=4.44'));
  await page.waitForFunction((b) => document.querySelector('#verdict').textContent !== b, before);
  const after = await page.textContent('#verdict');
  // Before 4.45 the prefill keeps fp32 logits for all 8,192 prompt positions: 8192 × 128,256 × 4 B = 3.9 GiB more.
  assert.ok(gib(after) > gib(before) + 3, `${before} → ${after}`);
  await page.close();
});

test('recompute after an input change is fast (reported, not asserted)', async () => {
  const page = await browser.newPage();
  await page.goto(base);
  await page.waitForSelector('#verdict');
  const r = await page.evaluate(async () => {
    const input = document.querySelector('#seq');
    const verdict = document.querySelector('#verdict');
    const times = [];
    for (let i = 0; i < 60; i++) {
      const before = verdict.textContent;
      const t0 = performance.now();
      input.value = String(512 + 97 * i);
      input.dispatchEvent(new InputEvent('input', { bubbles: true }));
      // Time until the DOM shows the new verdict (the render is scheduled as a microtask); paint excluded.
      while (verdict.textContent === before && performance.now() - t0 < 50) await Promise.resolve();
      if (verdict.textContent === before) await new Promise((res) => setTimeout(res, 0));
      times.push(performance.now() - t0);
      await new Promise((res) => setTimeout(res, 5));
    }
    times.sort((a, b) => a - b);
    return { median: times[30], p90: times[54], changed: verdict.textContent };
  });
  console.log(`recompute + re-render per input change: median ${r.median.toFixed(1)} ms, p90 ${r.p90.toFixed(1)} ms`);
  const adv = await page.evaluate(() => {
    const forms = [{}, { mode: 'full' }, { mode: 'inference' }, { model: 'qwen2.5-72b', gpu: 'a100-80gb', gpus: 8 }];
    const runs = 80;
    const t0 = performance.now();
    let n = 0;
    for (let i = 0; i < runs; i++) n += window.vramfit.advise(forms[i % forms.length]).remedies.length;
    return { ms: (performance.now() - t0) / runs, n };
  });
  console.log(`full advice pass in the browser: ${adv.ms.toFixed(2)} ms`);
  assert.ok(adv.n > 0);
  assert.ok(Number.isFinite(r.median));
  await page.close();
});

test('screenshots: dark theme, Chinese, phone width', async () => {
  const dark = await browser.newContext({ colorScheme: 'dark', locale: 'zh-CN' });
  const page = await dark.newPage();
  await page.goto(base);
  await page.waitForSelector('#verdict');
  assert.match(await page.textContent('legend'), /模型与硬件/);
  await page.screenshot({ path: join(OUT, 'dark-zh.png'), fullPage: true });
  await dark.close();
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'en-US' });
  const p2 = await phone.newPage();
  await p2.goto(base + '?mode=inference&model=llama-3.1-70b&gpu=h100-sxm&gpus=2&par=tensor');
  await p2.waitForSelector('#verdict');
  assert.match(await p2.textContent('#breakdown'), /KV cache/);
  await p2.screenshot({ path: join(OUT, 'phone.png'), fullPage: true });
  await phone.close();
});

test('hostile calls to window.vramfit throw errors and leave the page working', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.goto(base);
  await page.waitForSelector('#verdict');
  const results = await page.evaluate(() => {
    const nest = (n) => { let o = {}; for (let i = 0; i < n; i++) o = { arch: o }; return o; };
    const circular = { mode: 'lora' }; circular.self = circular;
    const wide = { notes: 'x'.repeat(2 << 20) };
    const calls = {
      deep: () => window.vramfit.estimate(nest(5000)),
      deeper: () => window.vramfit.estimate(nest(200000)),
      circular: () => window.vramfit.estimate(circular),
      circularForm: () => window.vramfit.advise(circular),
      huge: () => window.vramfit.estimate(wide),
      bigint: () => window.vramfit.estimate({ micro_batch: 10n }),
      wrap: () => window.vramfit.estimate({ micro_batch: 4294967295, grad_accum: 4294967295, gpus: 2 }),
      mla: () => window.vramfit.estimate({ arch: { attention: 'mla', mla: { q_lora_rank: 0, kv_lora_rank: 4294967295, qk_nope_head_dim: 128, qk_rope_head_dim: 1, v_head_dim: 128 } } }),
      infinite: () => window.vramfit.estimate({ dataset_gib: 1e300 }),
      zeroHidden: () => window.vramfit.advise({ model: 'custom', custom_arch: { hidden: 0 } }),
    };
    const out = {};
    for (const [name, call] of Object.entries(calls)) {
      try { call(); out[name] = 'returned'; } catch (e) { out[name] = `${e.constructor.name}: ${e.message}`.slice(0, 160); }
    }
    out.after = window.vramfit.estimate({ model: 'qwen2.5-7b' }).device_total;
    return out;
  });
  for (const name of ['deep', 'deeper', 'circular', 'circularForm', 'huge', 'bigint', 'wrap', 'mla', 'infinite', 'zeroHidden']) {
    assert.match(results[name], /^Error: vramfit: /, `${name}: ${results[name]}`);
  }
  assert.match(results.wrap, /micro_batch/);
  assert.match(results.mla, /kv_lora_rank/);
  assert.match(results.infinite, /dataset_gib/);
  assert.match(results.zeroHidden, /custom_arch\.hidden/);
  assert.ok(results.after > 2 ** 30, JSON.stringify(results));
  // The page still answers its inputs after all of that.
  const before = await page.textContent('#verdict');
  await page.fill('#batch', '16');
  await page.waitForFunction((b) => document.querySelector('#verdict').textContent !== b, before);
  assert.deepEqual(problems, []);
  await page.close();
});

test('screenshots: the curve and the serving planner, both languages, phone width', async () => {
  for (const [locale, name] of [['en-US', 'en'], ['zh-CN', 'zh']]) {
    const ctx = await browser.newContext({ locale });
    const page = await ctx.newPage();
    await page.goto(base + '?mode=inference&model=llama-3.1-8b&gpu=h100-sxm&prompt=30000&new=2000');
    await page.waitForSelector('#serve-verdict');
    assert.match(await page.textContent('#serve-kv'), /GiB/);
    await page.locator('#curve').screenshot({ path: join(OUT, `curve-serve-${name}.png`) });
    await page.locator('#serve').screenshot({ path: join(OUT, `serve-${name}.png`) });
    await ctx.close();
  }
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'zh-CN' });
  const p = await phone.newPage();
  await p.goto(base + '?varlen=0');
  await p.waitForSelector('#curve');
  assert.match(await p.textContent('#curve-crossing'), /\d/);
  await p.locator('#curve').screenshot({ path: join(OUT, 'curve-phone-zh.png') });
  await phone.close();
});
