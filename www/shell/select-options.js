// One way for the page and the widget to fill a <select>: the layer, head and query pickers.

/**
 * Make `select`'s options equal `items` ([value, label] pairs), reusing the options already
 * there: typing one more word changes one or two of 512 query labels, and rebuilding all of them
 * (createElement per option) took 25–35 ms of a frame at 512 tokens. Focus and scroll stay.
 */
export function setOptions(select, items) {
  const opts = select.options;
  while (opts.length > items.length) select.remove(opts.length - 1);
  for (let i = 0; i < opts.length; i++) {
    const [value, label] = items[i];
    if (opts[i].value !== value) opts[i].value = value;
    if (opts[i].textContent !== label) opts[i].textContent = label;
  }
  if (opts.length === items.length) return;
  const more = document.createDocumentFragment();
  for (let i = opts.length; i < items.length; i++) {
    const o = document.createElement('option');
    [o.value, o.textContent] = items[i];
    more.appendChild(o);
  }
  select.appendChild(more);
}
