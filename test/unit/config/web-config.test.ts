import { describe, expect, it } from 'vitest';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import { isLoopback, parseListen } from '../../../host/config/web-config.ts';

const web = (w: Record<string, unknown>) => hostConfigSchema.safeParse({ web: w });

describe('[web] config', () => {
  it('is off unless listen is set', () => {
    expect(hostConfigSchema.parse({}).web.listen).toBeUndefined();
  });

  it('accepts loopback addresses and refuses any other unless allow_remote says so', () => {
    for (const listen of ['127.0.0.1:8750', 'localhost:8750', '[::1]:8750'])
      expect(web({ listen }).success).toBe(true);
    for (const listen of ['0.0.0.0:8750', '192.168.1.5:8750', '[::]:8750']) {
      const r = web({ listen });
      expect(r.success).toBe(false);
      expect(r.error?.issues[0]?.message).toMatch(
        /not a loopback address.*reverse proxy with TLS.*allow_remote = true/,
      );
      expect(web({ listen, allow_remote: true }).success).toBe(true);
    }
  });

  it('refuses an address that is not host:port or names a host by DNS', () => {
    for (const listen of ['8750', 'example.com:8750', '127.0.0.1:99999', '127.0.0.1'])
      expect(web({ listen }).success).toBe(false);
    expect(parseListen('[::1]:8750')).toEqual({ host: '::1', port: 8750 });
    expect(isLoopback('127.8.0.1')).toBe(true);
    expect(isLoopback('10.0.0.1')).toBe(false);
  });
});
