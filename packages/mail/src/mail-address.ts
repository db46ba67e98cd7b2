/**
 * One plain address (`local@domain`): a dot-atom local part and a domain of letters, digits, hyphens and dots, as
 * the addresses of mailing lists and people are. No quoted local parts, comments, display names, spaces, commas,
 * angle brackets or line breaks, so a value that passes cannot name a second recipient or start a header.
 */
export function isPlainAddress(value: string): boolean {
  return (
    value.length <= 254 &&
    /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/.test(
      value,
    )
  );
}
