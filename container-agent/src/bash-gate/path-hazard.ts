/**
 * Paths that reach outside the command's own files: `/proc` (every process's environment, memory and
 * descriptors, among them the agent's IPC stream), `/dev/fd` and `/dev/std*` (links into /proc), and
 * `/dev/tcp`, `/dev/udp` (sockets bash opens itself). A word is judged by what it *could* expand to, not
 * by its spelling: a glob (`/pro[c]`), `..` after `/dev`, a variable in the middle of a path, or a home
 * prefix other than the agent's own (`~sys` is `/dev` on Debian; `~+` is wherever an earlier `cd` went)
 * all escalate. This is a net, not the boundary: commands cannot read the agent's process whatever it
 * misses (see DESIGN.md, "Bash gate").
 */
import { quote } from './verdict.ts';

/** Names under `/dev` that lead into /proc or to sockets. */
const DEV_HAZARDS = ['fd', 'stdin', 'stdout', 'stderr', 'tcp', 'udp', '..'];

export interface PathHazard {
  reason: string;
  network: boolean;
}

/**
 * One path component as bash may see it: `exact` when it is literal text, otherwise a regex of what it
 * may match (globs, expansions).
 */
interface Component {
  exact: string | null;
  pattern: RegExp;
  /** Holds an expansion, whose value may hold slashes too (one component may become several). */
  expands: boolean;
}

/** The index of the last character of the expansion starting at `start` (`$x`, `${…}`, `$(…)`, backticks). */
function expansionEnd(text: string, start: number): number {
  if (text[start] === '`') {
    const close = text.indexOf('`', start + 1);
    return close === -1 ? text.length - 1 : close;
  }
  const next = text[start + 1];
  if (next === '{' || next === '(') {
    const open = next;
    const closeChar = next === '{' ? '}' : ')';
    let depth = 0;
    for (let i = start + 1; i < text.length; i++) {
      if (text[i] === open) depth++;
      else if (text[i] === closeChar && --depth === 0) return i;
    }
    return text.length - 1;
  }
  if (next !== undefined && /[A-Za-z_]/.test(next)) {
    let i = start + 1;
    while (i + 1 < text.length && /[A-Za-z0-9_]/.test(text[i + 1] as string)) i++;
    return i;
  }
  return next === undefined ? start : start + 1;
}

/** Removes quotes and backslashes; what is left is literal text, glob characters or expansions. */
function splitComponents(text: string): { components: Component[]; absolute: boolean } {
  const components: Component[] = [];
  let literal = '';
  let regex = '';
  let dynamic = false;
  let expands = false;
  let quoteChar: string | null = null;
  const push = (): void => {
    components.push({
      exact: dynamic ? null : literal,
      pattern: new RegExp(`^${regex}$`, 's'),
      expands,
    });
    literal = '';
    regex = '';
    dynamic = false;
    expands = false;
  };
  const addLiteral = (c: string): void => {
    literal += c;
    regex += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  };
  const addWild = (): void => {
    dynamic = true;
    if (!regex.endsWith('.*')) regex += '.*';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoteChar === "'") {
      if (c === "'") quoteChar = null;
      else if (c === '/') push();
      else addLiteral(c);
      continue;
    }
    if (c === '\\' && i + 1 < text.length) {
      const next = text[++i] as string;
      if (next === '/') push();
      else addLiteral(next);
      continue;
    }
    if (c === '"') {
      quoteChar = quoteChar === '"' ? null : '"';
      continue;
    }
    if (c === "'" && quoteChar === null) {
      quoteChar = "'";
      continue;
    }
    if (c === '/') {
      push();
      continue;
    }
    // Expansions, and globs or braces outside quotes, may match anything; `[…]` and `{…}` are read as
    // a whole (and widened to "anything"), so `pro[c]` and `pro{c,x}` can be proc.
    if (quoteChar === null && (c === '[' || c === '{')) {
      const close = text.indexOf(c === '[' ? ']' : '}', i + 2);
      if (close !== -1) i = close;
      addWild();
      continue;
    }
    if (c === '$' || c === '`') {
      i = expansionEnd(text, i);
      addWild();
      expands = true;
      continue;
    }
    if (quoteChar === null && (c === '*' || c === '?')) {
      addWild();
      continue;
    }
    addLiteral(c);
  }
  push();
  const absolute = components[0]?.exact === '';
  return { components: absolute ? components.slice(1) : components, absolute };
}

function hazardFor(shown: string, what: string, network: boolean): PathHazard {
  return { reason: `${quote(shown)} could reach ${what}`, network };
}

function computedHazard(shown: string): PathHazard {
  return {
    reason: `${quote(shown)} is computed at run time and could be /dev/tcp/…, /dev/fd/… or /proc/…`,
    network: true,
  };
}

/**
 * Why the word, used as a path, could reach /proc, /dev/fd, /dev/std*, /dev/tcp or /dev/udp; null when
 * it cannot. `text` is the word as written (quotes included). `fullyComputedIsHazard`: whether a word
 * with no fixed start at all (`"$f"`, `$(cmd)`) counts (yes for redirection targets).
 */
export function pathHazard(text: string, fullyComputedIsHazard: boolean): PathHazard | null {
  if (/^~[^/]/.test(text)) {
    return {
      reason: `${quote(text)}: only ~ and ~/ are trusted homes; ~user, ~+ and ~- may be any directory`,
      network: true,
    };
  }
  // A brace list may hide a whole path (`{/proc,x}`): any proc or dev/… between separators counts.
  if (/(?:^|[/{,])proc(?:$|[/},])/.test(text.replace(/["'\\]/g, ''))) return hazardFor(text, '/proc', false);
  const { components, absolute } = splitComponents(text);
  const first = components[0];
  // `~`, `~/…`, `$HOME`, `${HOME}`: the agent's home, an absolute directory commands cannot move.
  const trustedHome =
    first !== undefined &&
    (first.exact === '~' || /^"?\$(?:HOME|\{HOME\})"?$/.test(text.split('/')[0] ?? ''));
  let afterDev = false;
  let atRoot = absolute;
  for (let index = 0; index < components.length; index++) {
    const component = components[index] as Component;
    const wasAtRoot: boolean = atRoot;
    const wasAfterDev: boolean = afterDev;
    if (index === 0 && trustedHome) {
      atRoot = false;
      continue;
    }
    if (component.exact !== null) {
      const name = component.exact;
      if (name === 'proc') return hazardFor(text, '/proc', false);
      if (wasAfterDev && DEV_HAZARDS.includes(name))
        return hazardFor(text, `/dev/${name}`, name === 'tcp' || name === 'udp');
      // `.` and `//` stay where they are; `..` may climb to `/`, from where a later component may name
      // proc or dev.
      const stays = name === '' || name === '.';
      afterDev = name === 'dev' || (stays && wasAfterDev);
      atRoot = name === '..' || (stays && wasAtRoot);
      continue;
    }
    if (index === 0 && !absolute) {
      // The word starts with an expansion: its value is not known here.
      if (fullyComputedIsHazard) return computedHazard(text);
      // Its value may be empty or a directory such as /dev: what follows is judged as if at `/`.
      afterDev = true;
      atRoot = true;
      continue;
    }
    const could = (name: string): boolean => component.pattern.test(name);
    if (component.expands && (wasAfterDev || (wasAtRoot && (could('proc') || could('dev')))))
      return computedHazard(text);
    if (wasAtRoot && could('proc')) return hazardFor(text, '/proc', false);
    if (wasAfterDev) {
      const hit = DEV_HAZARDS.find(could);
      if (hit !== undefined) return hazardFor(text, `/dev/${hit}`, hit === 'tcp' || hit === 'udp');
    }
    afterDev = wasAtRoot && could('dev');
    atRoot = could('..');
  }
  return null;
}
