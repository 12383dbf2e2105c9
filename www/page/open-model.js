// The page's "Open your model…": the button and its panel (a folder picker and a multi-file
// picker), drops of a folder or files anywhere on the page, and "Remove" for a model the user
// opened. The work is the session's (openModel, removeModel), shared with the widget.

import { collectDrop, hubId, hubRepoFromUrl, parseHubId, SUPPORTED_TEXT, workerHub } from '../core/engine.js';
import { listen } from '../base/timing.js';

export function bindOpenModel(el, session) {
  el.openHelp.textContent = `Opens ${SUPPORTED_TEXT}. The files are read here and never leave your browser.`;
  listen('page', el.openModel, 'click', () => {
    el.openPanel.hidden = !el.openPanel.hidden;
    el.openModel.setAttribute('aria-expanded', String(!el.openPanel.hidden));
  });
  // The rejection is already said in the notice: nothing else to do with it.
  const open = (files, name = null) => {
    el.openPanel.hidden = true;
    el.openModel.setAttribute('aria-expanded', 'false');
    return session.openFiles(files, name).catch(() => {});
  };
  // A Hub repo by id: the same path as a permalink's m=hf:… (session.openHub).
  el.hubHelp.textContent = `Fetched from ${workerHub()} into this browser (then kept), e.g. sentence-transformers/all-MiniLM-L6-v2; the permalink names it as hf:owner/name.`;
  listen('page', el.hubForm, 'submit', (e) => {
    e.preventDefault();
    // A repo's URL pasted from the Hub's address bar names the repo (and its revision and file).
    const pasted = hubRepoFromUrl(el.hubRepo.value);
    const repo = pasted ? pasted.repo : el.hubRepo.value.trim().replace(/^hf:/, '');
    if (!repo) return;
    el.openPanel.hidden = true;
    el.openModel.setAttribute('aria-expanded', 'false');
    let id;
    try {
      const revision = el.hubRevision.value.trim() || pasted?.revision || 'main';
      id = hubId(parseHubId(hubId({ repo, revision, file: el.hubFile.value.trim() || pasted?.file || null })));
    } catch (err) {
      session.say(err.message);
      return;
    }
    session.openHub(id).catch(() => {}); // the notice says why
  });
  for (const input of [el.openFolder, el.openFiles]) {
    listen('page', input, 'change', () => {
      open(Array.from(input.files)); // an empty folder too: the notice says it held nothing
      input.value = ''; // picking the same folder again opens it again
    });
  }
  const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes('Files');
  listen('page', document, 'dragover', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    document.body.classList.add('dropping');
  });
  listen('page', document, 'dragleave', (e) => {
    if (!e.relatedTarget) document.body.classList.remove('dropping');
  });
  listen('page', document, 'drop', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    document.body.classList.remove('dropping');
    collectDrop(e.dataTransfer).then(({ files, name }) => open(files, name), (err) => {
      session.say(`Could not open the dropped files: ${err.message}`);
    });
  });
  listen('page', el.removeModel, 'click', () => {
    const m = session.manifest;
    if (m && m.user) session.removeModel(m.id).catch((err) => session.fail(err));
  });
}

/** Show "Remove" for a model the user opened. */
export function syncOpenModel(el, session) {
  el.removeModel.hidden = !(session.manifest && session.manifest.user);
}
