import type * as z from 'zod';

/**
 * A refinement for an http(s) URL in config.yaml that refuses a user name or password in it
 * (`https://user:key@host/v1`). config.yaml is no place for a secret: `assistant config check`, the dashboard's
 * /config and /health show its URLs, and event and metrics files record them. Node's fetch refuses such a URL anyway
 * (and names it, credentials included, in its error), so it never worked. `hint` says where the credential goes
 * instead; the message shows the URL with its credentials masked, never the credentials.
 */
export function refuseUrlCredentials(hint: string): (text: string, context: z.core.$RefinementCtx<string>) => void {
  return (text, context) => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      // Not a URL at all: the URL check reports it.
      return;
    }
    if (url.username === '' && url.password === '') return;
    const masked = `${url.protocol}//${url.username === '' ? '' : '***'}${url.password === '' ? '' : ':***'}@${url.host}${url.pathname}`;
    context.addIssue({
      code: 'custom',
      message: `the URL holds a user name or password (${masked}); config.yaml is shown by \`assistant config check\`, /config and /health, and its URLs are logged`,
      params: { hint },
      input: masked,
    });
  };
}
