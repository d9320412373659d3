import crypto from 'node:crypto';

export class ApprovalParamsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ApprovalParamsError';
  }
}

/**
 * JSON with object keys sorted at every level and no whitespace, so the same parameters always give the
 * same text (and hash) however they were built. Only plain JSON is accepted: anything JSON would silently
 * change (NaN, undefined in arrays, Dates, Maps, class instances, cycles) is refused, because the owner must
 * approve exactly what will run. Object members whose value is undefined are left out, as JSON does.
 */
export function canonicalJson(value: unknown): string {
  return encode(value, '$', new Set());
}

export function hashCanonicalJson(json: string): string {
  return crypto.createHash('sha256').update(json, 'utf8').digest('hex');
}

/** sha256 (hex) of the canonical JSON of `params`. */
export function hashParams(params: unknown): string {
  return hashCanonicalJson(canonicalJson(params));
}

function encode(v: unknown, where: string, open: Set<object>): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(v)) throw new ApprovalParamsError(`${where} is ${v}, which JSON cannot carry`);
      return JSON.stringify(v);
    case 'object':
      break;
    default:
      throw new ApprovalParamsError(
        `${where} is ${v === undefined ? 'missing' : `a ${typeof v}`}; approval parameters must be plain JSON`,
      );
  }
  const obj = v as object;
  if (open.has(obj))
    throw new ApprovalParamsError(`${where} refers back to itself; parameters must be a tree`);
  open.add(obj);
  try {
    if (Array.isArray(obj)) {
      const items: string[] = [];
      for (let i = 0; i < obj.length; i++) {
        if (!(i in obj) || obj[i] === undefined)
          throw new ApprovalParamsError(
            `${where}[${i}] is empty; arrays in approval parameters must not have holes`,
          );
        items.push(encode(obj[i], `${where}[${i}]`, open));
      }
      return `[${items.join(',')}]`;
    }
    const proto = Object.getPrototypeOf(obj) as unknown;
    if (proto !== Object.prototype && proto !== null)
      throw new ApprovalParamsError(`${where} is not a plain object; approval parameters must be plain JSON`);
    const record = obj as Record<string, unknown>;
    const members = Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${encode(record[k], `${where}.${k}`, open)}`);
    return `{${members.join(',')}}`;
  } finally {
    open.delete(obj);
  }
}
