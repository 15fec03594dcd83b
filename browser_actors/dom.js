// One in-page pass over the composed DOM (same-origin iframes and open shadow roots included):
//  - stamps `data-wa-id="<n>"` on every element the agent may act on or read (interactive elements and
//    elements holding text), so each id in an observation resolves to the element itself;
//  - ids live in a WeakMap on the top window, so they are stable for the life of the document;
//  - builds the simplified HTML (WebRL / WebAgent-R1 style) when opts.html is true; with opts.idsAfter an
//    element's id follows its content (`<button> Submit [5]</button>`) instead of sitting in its opening tag
//    (inputs, images and selects keep it in the tag; a text area's follows its value with no space), and page
//    text writes '[' as &#91; so every [n] is an id.
// Called as page.evaluate(SOURCE, opts); returns {html, title, headings, count}.
(opts) => {
  const ATTR = 'data-wa-id';
  const st = window.__waState || (window.__waState = { next: 1, ids: new WeakMap() });
  const MAX_TEXT = opts.maxText || 400;
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'BASE', 'TITLE']);
  const ITAGS = new Set(['A', 'BUTTON', 'INPUT', 'SELECT', 'TEXTAREA', 'SUMMARY', 'IFRAME', 'FRAME']);
  const IROLES = new Set(['button', 'link', 'checkbox', 'radio', 'tab', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'option', 'switch', 'textbox', 'combobox', 'searchbox', 'slider', 'spinbutton',
    'treeitem', 'listbox']);
  const CONTENT = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'P', 'LI', 'TD', 'TH', 'DT', 'DD', 'LABEL',
    'CAPTION', 'LEGEND', 'FIGCAPTION', 'BLOCKQUOTE', 'PRE', 'IMG']);
  // These keep their tag even when their text sits in inline children (<h1><span>Title</span></h1>, cells).
  const NAMED = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'P', 'TD', 'TH', 'DT', 'DD', 'LABEL', 'CAPTION',
    'LEGEND', 'FIGCAPTION', 'BLOCKQUOTE', 'PRE']);
  const STRUCT = new Set(['TABLE', 'TR', 'UL', 'OL', 'FORM', 'DIALOG', 'FIELDSET']);
  const SHOW = ['role', 'type', 'name', 'placeholder', 'aria-label', 'title', 'alt', 'aria-expanded',
    'aria-checked', 'aria-selected', 'aria-current', 'min', 'max'];
  const out = [];
  const headings = [];
  let count = 0;

  const clean = (s) => s.replace(/\s+/g, ' ').trim();
  // Cut at most n UTF-16 units, on a grapheme boundary: a plain slice can split a surrogate pair (an emoji),
  // and the lone half cannot be encoded as UTF-8 once the text reaches Python (common/text.py says the rule).
  const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  const cut = (s, n) => {
    if (s.length <= n) return s;
    let end = 0;
    for (const g of graphemes.segment(s)) {
      if (g.index + g.segment.length > n) break;
      end = g.index + g.segment.length;
    }
    return s.slice(0, end) + '…';
  };
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  // Text between tags: with ids after the content, a '[' of the page must not read as an id marker.
  const escText = opts.idsAfter ? (s) => esc(s).replace(/\[/g, '&#91;') : esc;

  // Forged ids (page markup that already carries our attribute) would make a locator ambiguous.
  const dropForged = (doc) => {
    for (const el of doc.querySelectorAll('[' + ATTR + ']')) if (!st.ids.has(el)) el.removeAttribute(ATTR);
  };
  const stamp = (el) => {
    let id = st.ids.get(el);
    if (id === undefined) { id = st.next++; st.ids.set(el, id); }
    if (el.getAttribute(ATTR) !== String(id)) el.setAttribute(ATTR, String(id));
    count++;
    return id;
  };
  // Children in the composed (rendered) tree: shadow content replaces light children; slots show what is assigned.
  const kids = (el) => {
    if (el.shadowRoot) return el.shadowRoot.childNodes;
    if (el.tagName === 'SLOT') {
      const a = el.assignedNodes({ flatten: true });
      return a.length ? a : el.childNodes;
    }
    return el.childNodes;
  };
  const directText = (el) => {
    let t = '';
    for (const n of kids(el)) if (n.nodeType === 3) t += n.data;
    return clean(t);
  };
  const interactive = (el, cs, parentPointer) => {
    const t = el.tagName;
    if (t === 'A') return el.hasAttribute('href') || el.hasAttribute('onclick') || el.hasAttribute('role');
    if (t === 'INPUT') return el.type !== 'hidden';
    if (ITAGS.has(t)) return true;
    const role = el.getAttribute('role');
    if (role && IROLES.has(role)) return true;
    if (el.hasAttribute('onclick')) return true;
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return true;
    const ti = el.getAttribute('tabindex');
    if (ti !== null && Number(ti) >= 0) return true;
    // Script-bound click targets (React etc.) usually show a pointer; children inherit it, so only the outermost.
    return cs.cursor === 'pointer' && !parentPointer;
  };
  const attrs = (el, doc) => {
    const parts = [];
    for (const a of SHOW) {
      const v = el.getAttribute(a);
      if (v === null || v === '' || (a === 'type' && v === 'text')) continue;
      parts.push(a + '="' + esc(cut(clean(v), 80)) + '"');
    }
    if (opts.links !== false && el.tagName === 'A' && el.hasAttribute('href')) {
      let h = el.getAttribute('href');
      try {
        const u = new URL(h, doc.baseURI);
        h = u.origin === location.origin ? u.pathname + u.search + u.hash : u.href;
      } catch (e) { /* keep the raw href */ }
      parts.push('href="' + esc(cut(h, 100)) + '"');
    }
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'TEXTAREA') {
      const ty = (el.type || '').toLowerCase();
      if (ty === 'checkbox' || ty === 'radio') {
        if (el.value && el.value !== 'on') parts.push('value="' + esc(cut(el.value, 40)) + '"');
        if (el.checked) parts.push('checked');
      }
      else if (ty === 'password') { if (el.value) parts.push('value="' + '*'.repeat(Math.min(el.value.length, 8)) + '"'); }
      else if (tag === 'INPUT' && el.value) parts.push('value="' + esc(cut(el.value, 80)) + '"');
    }
    if (el.disabled) parts.push('disabled');
    if (el.required) parts.push('required');
    return parts.length ? ' ' + parts.join(' ') : '';
  };
  const emitSelect = (el, id, doc) => {
    out.push('\n<select id="' + id + '"' + attrs(el, doc) + '>');
    const opts = Array.from(el.options);
    for (const o of opts.slice(0, 60)) {
      out.push(' <option' + (o.selected ? ' selected' : '') +
        (o.value && o.value !== clean(o.text) ? ' value="' + esc(cut(o.value, 40)) + '"' : '') + '>' +
        escText(cut(clean(o.text), 80)) + '</option>');
    }
    if (opts.length > 60) out.push(' (' + (opts.length - 60) + ' more options)');
    out.push(' </select>\n');
  };

  const walkChildren = (el, doc, pointer) => {
    for (const n of kids(el)) {
      if (n.nodeType === 3) { const t = clean(n.data); if (t) out.push(' ' + escText(cut(t, MAX_TEXT))); }
      else if (n.nodeType === 1) visit(n, doc, pointer);
    }
  };

  const visit = (el, doc, parentPointer) => {
    const tag = el.tagName;
    if (SKIP.has(tag)) return;
    const cs = doc.defaultView.getComputedStyle(el);
    if (cs.display === 'none') return;
    if (cs.display === 'contents') { walkChildren(el, doc, parentPointer); return; }
    if (cs.visibility === 'hidden' || cs.visibility === 'collapse' || Number(cs.opacity) === 0) return;
    if (tag === 'INPUT' && el.type === 'hidden') return;
    const r = el.getBoundingClientRect();
    const w = doc.defaultView;
    if (r.right + w.scrollX <= 0 || r.bottom + w.scrollY <= 0) return;  // parked off-screen (skip links etc.)
    if (r.width === 0 && r.height === 0 && el.childElementCount === 0 && !el.shadowRoot) return;
    const pointer = cs.cursor === 'pointer';
    const text = directText(el);
    const isInter = interactive(el, cs, parentPointer);
    const block = !cs.display.startsWith('inline');
    let keep = isInter;
    if (!keep && tag === 'IMG') keep = !!(el.getAttribute('alt') || el.getAttribute('title'));
    else if (!keep && text) keep = CONTENT.has(tag) || block;
    else if (!keep && NAMED.has(tag)) keep = !!clean(el.textContent || '');
    if (!keep) {
      if (STRUCT.has(tag)) {
        out.push('\n<' + tag.toLowerCase() + '>');
        walkChildren(el, doc, pointer || parentPointer);
        out.push('</' + tag.toLowerCase() + '>\n');
      } else {
        if (block) out.push('\n');
        walkChildren(el, doc, pointer || parentPointer);
        if (block) out.push('\n');
      }
      return;
    }
    const id = stamp(el);
    if (!opts.html) {  // stamping only (accessibility-tree mode): still descend for nested elements
      if (/^H[1-3]$/.test(tag) && headings.length < 8) headings.push(cut(clean(el.innerText || ''), 80));
      if (tag === 'IFRAME' || tag === 'FRAME') visitFrame(el);
      else if (tag !== 'SELECT') walkChildren(el, doc, pointer || parentPointer);
      return;
    }
    if (/^H[1-3]$/.test(tag) && headings.length < 8) headings.push(cut(clean(el.innerText || ''), 80));
    if (tag === 'SELECT') { emitSelect(el, id, doc); return; }
    const name = tag.toLowerCase();
    const start = (block ? '\n<' : ' <') + name;
    if (tag === 'INPUT' || tag === 'IMG') {
      out.push(start + ' id="' + id + '"' + attrs(el, doc) + '>' + (block ? '\n' : ''));
      return;
    }
    const open = start + (opts.idsAfter ? '' : ' id="' + id + '"') + attrs(el, doc) + '>';
    if (tag === 'TEXTAREA') {
      // no space before the id: the value's own spaces are kept as they are (the copy tasks compare them)
      out.push(open + escText(cut(el.value, MAX_TEXT)) + (opts.idsAfter ? '[' + id + ']' : '') + '</textarea>');
      return;
    }
    out.push(open);
    if (tag === 'IFRAME' || tag === 'FRAME') visitFrame(el);
    else walkChildren(el, doc, pointer || parentPointer);
    out.push((opts.idsAfter ? ' [' + id + ']' : ' ') + '</' + name + '>' + (block ? '\n' : ''));
  };

  const visitFrame = (el) => {
    let sub = null;
    try { sub = el.contentDocument; } catch (e) { sub = null; }
    if (!sub || !sub.body) { if (opts.html) out.push(' (cross-origin frame: not shown) '); return; }
    dropForged(sub);
    walkChildren(sub.body, sub, false);
  };

  dropForged(document);
  if (document.body) visit(document.body, document, false);
  let html = out.join('');
  html = html.replace(/[ \t]+/g, ' ').replace(/ ?\n ?/g, '\n').replace(/\n{2,}/g, '\n').trim();
  return { html, title: document.title || '', headings, count };
}
