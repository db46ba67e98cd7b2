// The dashboard's own script: tells whether the live stream is connected and shows errors of htmx requests. Pages
// work without it; CSP allows no inline script, so everything interactive is htmx attributes plus this file.
(() => {
  const status = () => document.getElementById('live-status');
  const flash = (text) => {
    const element = document.getElementById('flash');
    if (element) element.textContent = text;
  };
  document.addEventListener('htmx:sseOpen', () => {
    const element = status();
    if (!element) return;
    element.textContent = 'live';
    element.className = 'live-status live';
  });
  document.addEventListener('htmx:sseError', () => {
    const element = status();
    if (!element) return;
    element.textContent = 'reconnecting…';
    element.className = 'live-status down';
  });
  document.addEventListener('htmx:responseError', (event) => {
    const xhr = event.detail.xhr;
    flash(`${xhr.status}: ${xhr.responseText.slice(0, 500)}`);
  });
  document.addEventListener('htmx:sendError', () => flash('the server did not answer; is it running?'));
  document.addEventListener('htmx:afterRequest', (event) => {
    if (event.detail.successful) flash('');
  });
  // Live refreshes at most once a second that never miss the last change (Overview, Log). An element with
  // `data-live-events="queue"` (names of the stream's events, space-separated) and `hx-trigger="live-refresh"` gets a
  // `live-refresh` event when one of those events arrives: at once if the last was a second ago or more, else at the
  // end of that second. htmx's own `throttle:` drops the events inside its window, so a part could keep showing a
  // state already gone (a task's `added` shown, its `completed` dropped). When the stream (re)opens every part
  // refreshes once: what changed between the page's rendering (or the drop) and the stream's start is not missed.
  const liveIntervalMs = 1000;
  const liveNames = ['queue', 'log', 'approvals', 'models'];
  const liveTimers = new Map();
  const liveLast = new Map();
  const seenSources = new WeakSet();
  const refresh = (name) => {
    liveTimers.delete(name);
    const targets = [...document.querySelectorAll(`[data-live-events~="${name}"]`)];
    if (targets.length === 0) return;
    // A request still running would drop this one (htmx keeps only requests of elements still on the page).
    if (targets.some((element) => element.classList.contains('htmx-request'))) {
      liveTimers.set(
        name,
        setTimeout(() => refresh(name), 100),
      );
      return;
    }
    liveLast.set(name, Date.now());
    for (const element of targets) htmx.trigger(element, 'live-refresh');
  };
  const schedule = (name) => {
    if (liveTimers.has(name)) return;
    const waitMs = Math.max(0, (liveLast.get(name) ?? 0) + liveIntervalMs - Date.now());
    liveTimers.set(
      name,
      setTimeout(() => refresh(name), waitMs),
    );
  };
  document.addEventListener('htmx:sseOpen', (event) => {
    const source = event.detail.source;
    for (const name of liveNames) schedule(name);
    if (!source || seenSources.has(source)) return;
    seenSources.add(source);
    for (const name of liveNames) source.addEventListener(name, () => schedule(name));
  });
  // Ctrl+Enter (⌘+Enter) in a textarea marked `data-submit-on-ctrl-enter` sends its form (the chat's message box), so
  // a keyboard user need not Tab to the button; Enter alone still makes a new line.
  document.addEventListener('keydown', (event) => {
    const target = event.target;
    if (event.key !== 'Enter' || !(event.ctrlKey || event.metaKey)) return;
    if (!(target instanceof HTMLTextAreaElement) || !target.hasAttribute('data-submit-on-ctrl-enter')) return;
    event.preventDefault();
    target.form?.requestSubmit();
  });
})();
