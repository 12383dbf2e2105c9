// The reader declines the exact weights' download. Under 'auto' weights the first map comes from
// the int8 file and the f32 one (a model's largest download: MiniLM's 87 MiB) follows in the
// background, its size and progress in the status line; beside it, on the page and in the widget,
// a Stop button while it runs. Pressing it keeps the int8 weights, as picking "int8 only" does
// (core/session-models.js stopExact); the download stops unless another widget still wants it.

import { listen } from '../base/timing.js';

/** Make `button` the Stop button of `session` (scope: the timing log's name, 'page' | 'widget'). */
export function bindStopExact(scope, button, session) {
  button.textContent = 'Stop download';
  button.title = 'Stop downloading the exact f32 weights: the maps stay on the int8 weights';
  listen(scope, button, 'click', () => session.patch({ weights: 'int8' }));
}

/** Show the button while the exact weights download. */
export function showStopExact(button, session) {
  button.hidden = !session.fetchingExact();
}
