// The page's status line, download progress, truncation warnings and translation output.

import { computingText, loadingText, progressBar, summary } from '../shell/prose.js';
import { permalinkNotice, textLimitNotice } from '../core/state.js';
import { showStopExact } from '../shell/stop-exact.js';

export function renderProgress(el, session) {
  const bar = progressBar(session);
  el.progressBox.hidden = !bar;
  if (!bar) return;
  el.progress.max = bar.max;
  el.progress.value = bar.value;
  el.progress.setAttribute('aria-label', bar.label);
  el.progressText.textContent = bar.text;
}

export function renderStatus(el, session) {
  renderProgress(el, session);
  const sum = summary(session);
  const error = session.error;
  el.status.classList.toggle('error', !!error);
  let text = error ? `Error: ${error}` : sum.text;
  if (!error && session.phase === 'loading' && session.manifest) text = loadingText(session);
  if (!error && sum.catchingUp) text += ` · ${sum.catchingUp}`;
  else if (!error && session.busy) text += ` · ${computingText(session)}`;
  el.status.textContent = text;
  if (session.busy) el.wrap.setAttribute('aria-busy', 'true');
  else el.wrap.removeAttribute('aria-busy');
  el.truncation.hidden = !sum.truncation;
  el.truncation.textContent = sum.truncation || '';
  // The session's notice (e.g. an unknown model in a permalink) and, for a text longer than a
  // permalink holds, that the permalink keeps only its start.
  const notice = [session.notice, textLimitNotice(session.state, session.textCut), permalinkNotice(session.state)].filter(Boolean).join(' ');
  el.notice.hidden = !notice;
  if (el.notice.textContent !== notice) el.notice.textContent = notice;
  el.retry.hidden = !session.retry; // a Hub model that failed to arrive: ask again
  showStopExact(el.stopExact, session);
  el.translation.hidden = sum.output == null;
  el.outputLabel.textContent = sum.outputLabel || 'Translation';
  el.output.textContent = sum.output ?? '';
  el.coverage.textContent = sum.coverage || '';
}
