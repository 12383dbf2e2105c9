// Runs a command (the browser suites: node --test …) with one headless Chromium for all of its
// test files: the browser is started here once and each file connects to it (ATTNVIZ_BROWSER_WS,
// harness.mjs's launchBrowser), instead of every file starting and stopping a Chromium of its own.
// A file still gets its own contexts (closed when it disconnects), so what one file stores or
// caches is never another's; a test that needs other browser flags launches its own browser.
//
//   node tests/e2e/with-browser.mjs node --test --test-concurrency=2 tests/e2e/*.test.mjs
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './harness.mjs';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: node tests/e2e/with-browser.mjs COMMAND [ARG…]');
  process.exit(2);
}

const server = await chromium.launchServer({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, ATTNVIZ_BROWSER_WS: server.wsEndpoint() } });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
const status = await new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
await server.close();
process.exit(status);
