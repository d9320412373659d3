import fs from 'node:fs';
import path from 'node:path';

/** One `deb` source line or deb822 stanza, reduced to what debootstrap needs. */
export interface AptSource {
  uri: string;
  suite: string;
  components: string[];
  /** A keyring file from Signed-By / [signed-by=…], when it names a file. */
  keyring?: string;
}

/** The mirror the offline base image is bootstrapped from. */
export interface AptMirror {
  mirror: string;
  suite: string;
  keyring?: string;
  /** The file the choice came from, for messages. */
  origin: string;
}

/** Parses the one-line format of /etc/apt/sources.list. `deb-src` and disabled lines are skipped. */
export function parseOneLineSources(text: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line.startsWith('deb ') && !line.startsWith('deb\t')) continue;
    let rest = line.slice(3).trim();
    let keyring: string | undefined;
    if (rest.startsWith('[')) {
      const close = rest.indexOf(']');
      if (close < 0) continue;
      for (const option of rest.slice(1, close).trim().split(/\s+/)) {
        const [key, value] = option.split('=', 2);
        if (key?.toLowerCase() === 'signed-by' && value?.startsWith('/')) keyring = value;
      }
      rest = rest.slice(close + 1).trim();
    }
    const [uri, suite, ...components] = rest.split(/\s+/);
    if (!uri || !suite) continue;
    sources.push({ uri, suite, components, ...(keyring ? { keyring } : {}) });
  }
  return sources;
}

/** Parses the deb822 format of /etc/apt/sources.list.d/*.sources. Stanzas with `Enabled: no` are skipped. */
export function parseDeb822Sources(text: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let current: string | undefined;
    for (const raw of stanza.split('\n')) {
      if (raw.startsWith('#')) continue;
      if (/^[ \t]/.test(raw)) {
        // Continuation line (e.g. an inline key block in Signed-By).
        if (current) fields.set(current, `${fields.get(current) ?? ''}\n${raw.trim()}`);
        continue;
      }
      const match = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(raw);
      if (!match) continue;
      current = match[1]!.toLowerCase();
      fields.set(current, match[2]!.trim());
    }
    const types = (fields.get('types') ?? '').split(/\s+/);
    if (!types.includes('deb')) continue;
    if ((fields.get('enabled') ?? 'yes').toLowerCase() === 'no') continue;
    const uris = (fields.get('uris') ?? '').split(/\s+/).filter(Boolean);
    const suites = (fields.get('suites') ?? '').split(/\s+/).filter(Boolean);
    const components = (fields.get('components') ?? '').split(/\s+/).filter(Boolean);
    const signedBy = (fields.get('signed-by') ?? '').trim();
    const keyring = signedBy.startsWith('/') && !signedBy.includes('\n') ? signedBy : undefined;
    for (const uri of uris) {
      for (const suite of suites) sources.push({ uri, suite, components, ...(keyring ? { keyring } : {}) });
    }
  }
  return sources;
}

/**
 * Picks the distribution's main archive among the configured sources: a plain suite (not
 * `-updates`, `-security`, `-backports`, not a flat `./` repository), preferring the host's own
 * release codename so that third-party repositories (e.g. `nodistro`) are not taken for it.
 */
export function chooseMirror(
  sources: readonly (AptSource & { origin: string })[],
  codename?: string,
): AptMirror | undefined {
  const plain = sources.filter(
    (s) => !s.suite.includes('-') && !s.suite.endsWith('/') && /^https?:\/\//.test(s.uri),
  );
  const pick = (codename ? plain.find((s) => s.suite === codename) : undefined) ?? plain[0];
  if (!pick) return undefined;
  return {
    mirror: pick.uri.replace(/\/+$/, ''),
    suite: pick.suite,
    origin: pick.origin,
    ...(pick.keyring ? { keyring: pick.keyring } : {}),
  };
}

/**
 * Reads the machine's apt configuration (sources.list, then sources.list.d in apt's order) and
 * returns the mirror and suite to bootstrap from. `rootDir` exists so tests can point at a fake /etc.
 */
export function readAptMirror(rootDir = '/'): AptMirror {
  const aptDir = path.join(rootDir, 'etc', 'apt');
  const sources: (AptSource & { origin: string })[] = [];
  const mainList = path.join(aptDir, 'sources.list');
  if (fs.existsSync(mainList)) {
    for (const s of parseOneLineSources(fs.readFileSync(mainList, 'utf8')))
      sources.push({ ...s, origin: mainList });
  }
  const listDir = path.join(aptDir, 'sources.list.d');
  const entries = fs.existsSync(listDir) ? fs.readdirSync(listDir).sort() : [];
  for (const name of entries) {
    const file = path.join(listDir, name);
    if (name.endsWith('.list')) {
      for (const s of parseOneLineSources(fs.readFileSync(file, 'utf8')))
        sources.push({ ...s, origin: file });
    } else if (name.endsWith('.sources')) {
      for (const s of parseDeb822Sources(fs.readFileSync(file, 'utf8'))) sources.push({ ...s, origin: file });
    }
  }
  const chosen = chooseMirror(sources, readCodename(rootDir));
  if (!chosen) {
    throw new Error(
      `No usable apt mirror found in ${mainList} or ${listDir}/*.{list,sources}: the offline image build ` +
        `bootstraps Debian from the mirror apt uses. Configure a 'deb' source for your release (e.g. bookworm) first.`,
    );
  }
  return chosen;
}

function readCodename(rootDir: string): string | undefined {
  const file = path.join(rootDir, 'etc', 'os-release');
  if (!fs.existsSync(file)) return undefined;
  const match = /^VERSION_CODENAME=("?)([^"\n]*)\1$/m.exec(fs.readFileSync(file, 'utf8'));
  return match?.[2] || undefined;
}
