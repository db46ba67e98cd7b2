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
})();
