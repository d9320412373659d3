/**
 * A small glob matcher for grep's file filter (Node 20 has no path.matchesGlob): "*" and "?" stay within
 * a path segment, "**" crosses segments, "{a,b}" alternates. A pattern without "/" matches the file name.
 */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  let i = 0;
  let braces = 0;
  while (i < glob.length) {
    const c = glob[i] as string;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slashAfter = glob[i + 2] === '/';
        source += slashAfter ? '(?:.*/)?' : '.*';
        i += slashAfter ? 3 : 2;
        continue;
      }
      source += '[^/]*';
    } else if (c === '?') {
      source += '[^/]';
    } else if (c === '{') {
      braces++;
      source += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      source += ')';
    } else if (c === ',' && braces > 0) {
      source += '|';
    } else {
      source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    i++;
  }
  source += ')'.repeat(braces);
  return new RegExp(`^${source}$`);
}

export function matchesGlob(relativePath: string, glob: string): boolean {
  const target = glob.includes('/') ? relativePath : relativePath.slice(relativePath.lastIndexOf('/') + 1);
  return globToRegExp(glob).test(target);
}
