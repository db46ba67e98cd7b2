// The dashboard's login key (decision 0023). The login cookie is sent to every port of this host, so a page another
// local user serves on another port receives it; the cookie alone therefore opens nothing. The key that does is kept
// in this origin's storage (scheme, host and port: no other port can read it) and sent as the `x-assistant-key`
// header: by htmx on every request, and by the bootstrap page that a full page load gets, which fetches the page
// again with the key and shows it. The CSP allows no inline script, so this file does all of it.
(() => {
  const storageName = 'assistant-dashboard-key';
  const header = 'x-assistant-key';
  const readKey = () => {
    try {
      return localStorage.getItem(storageName);
    } catch {
      return null;
    }
  };
  const forgetKey = () => {
    try {
      localStorage.removeItem(storageName);
    } catch {
      // Storage refused (a private mode): there is nothing to forget.
    }
  };
  const toLogin = () => {
    const next = `${location.pathname}${location.search}`;
    location.replace(`/login?next=${encodeURIComponent(next)}`);
  };
  const root = document.documentElement;
  const step = root.dataset.assistantSession;

  if (step === 'store') {
    // The login's answer: keep the key, go where the login was going (a path on this server, checked by the server).
    try {
      localStorage.setItem(storageName, root.dataset.key ?? '');
    } catch {
      const status = document.querySelector('[role="status"]');
      if (status)
        status.textContent =
          'This browser refuses to keep the login key (storage is off): the dashboard cannot work here.';
      return;
    }
    location.replace(root.dataset.next ?? '/');
    return;
  }

  // A page of the dashboard, or the bootstrap page that loads one: every htmx request carries the key, the history
  // restores htmx makes too.
  document.addEventListener('htmx:configRequest', (event) => {
    const key = readKey();
    if (key) event.detail.headers[header] = key;
  });
  document.addEventListener('htmx:historyCacheMiss', (event) => {
    const key = readKey();
    if (key) event.detail.xhr.setRequestHeader(header, key);
  });
  // Logging out forgets the key with the session.
  document.addEventListener('submit', (event) => {
    if (event.target instanceof HTMLFormElement && event.target.getAttribute('action') === '/logout') forgetKey();
  });

  if (step === 'load') {
    // The bootstrap page: the same URL again, with the key, and its body swapped in for this one. Not document.write:
    // the page's scripts are this page's already (same head), and htmx processes the new body once it is in.
    const key = readKey();
    if (!key) {
      toLogin();
      return;
    }
    const status = (text) => {
      const element = document.getElementById('session-status');
      if (element) element.textContent = text;
    };
    // After the load event, so htmx has set itself up on this page (on DOMContentLoaded) before the swap: it then
    // processes the new body once, from here, and opens its live stream once.
    const ready = new Promise((resolve) => {
      if (document.readyState === 'complete') resolve();
      else window.addEventListener('load', resolve, { once: true });
    });
    fetch(location.href, { headers: { [header]: key }, credentials: 'same-origin', cache: 'no-store' })
      .then(async (response) => {
        if (response.status === 401) {
          // The key is not this login's (logged in again elsewhere, or logged out): the login page gives a new one.
          forgetKey();
          toLogin();
          return;
        }
        const text = await response.text();
        await ready;
        const hash = location.hash;
        // A redirect the fetch followed (a folder to its listing, a lost login to /login) is where the tab now is.
        if (response.redirected) history.replaceState(null, '', `${response.url}${hash}`);
        const parsed = new DOMParser().parseFromString(text, 'text/html');
        document.title = parsed.title;
        delete root.dataset.assistantSession;
        document.body.replaceWith(document.adoptNode(parsed.body));
        if (window.htmx) window.htmx.process(document.body);
        if (hash.length > 1) document.getElementById(decodeURIComponent(hash.slice(1)))?.scrollIntoView();
      })
      .catch(() => status('The server did not answer; is it running? Reload to try again.'));
  }
})();
