export {
  type Authentication,
  type AuthenticationVerdicts,
  type TrustedAuthentication,
  trustedAuthentication,
} from './authentication-results.ts';
export { type ImapAccount, imapClient } from './imap-client.ts';
export { isPlainAddress } from './mail-address.ts';
export { withoutQuotedHistory } from './quoted-history.ts';
export { SmtpSendError, type SmtpServer, sendSmtp } from './smtp-send.ts';
