/** A list written as one whitespace-separated string, so that allowlist tables read (and diff) as data. */
export function words(list: string): string[] {
  return list.split(/\s+/).filter((w) => w !== '');
}
