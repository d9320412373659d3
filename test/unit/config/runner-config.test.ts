import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, type ConfigProblem } from '../../../host/config/config-error.ts';
import { loadConfig } from '../../../host/config/load-config.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const EXAMPLE_FILE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../config/config.example.toml',
);

const tempDir = useTempDirs();
let configFile: string;

beforeEach(() => {
  configFile = path.join(tempDir(), 'config.toml');
});

function load(text: string) {
  fs.writeFileSync(configFile, text);
  return loadConfig({ configFile, exampleFile: EXAMPLE_FILE });
}

function problemsOf(text: string): ConfigProblem[] {
  try {
    load(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error(`expected a ConfigError for:\n${text}`);
}

describe('[runner]', () => {
  it('defaults to the local Docker engine, unchanged', () => {
    expect(load('').runner.kind).toBe('docker');
  });

  it('takes a Kubernetes runner with its namespace, image, runtime class and gateway address', () => {
    const config = load(
      [
        '[runner]',
        'kind = "kubernetes"',
        '[runner.kubernetes]',
        'namespace = "agents"',
        'image = "registry.example/carapace-agent:1"',
        'runtime_class = "gvisor"',
        'gateway_address = "10.96.0.20:8787"',
        'listen_address = "10.244.1.7"',
        'probe_address = "10.96.0.1:443"',
        '[runner.kubernetes.resources]',
        'memory_mb = 512',
      ].join('\n'),
    );
    expect(config.runner).toEqual({
      kind: 'kubernetes',
      kubernetes: {
        namespace: 'agents',
        image: 'registry.example/carapace-agent:1',
        runtime_class: 'gvisor',
        gateway_address: '10.96.0.20:8787',
        listen_address: '10.244.1.7',
        probe_address: '10.96.0.1:443',
        resources: { cpu: 1, memory_mb: 512, scratch_mb: 256 },
      },
    });
  });

  it('says what a Kubernetes runner is missing, key by key', () => {
    const problems = problemsOf('[runner]\nkind = "kubernetes"\n');
    expect(problems.map((p) => [p.key, p.problem])).toEqual([
      [
        'runner.kubernetes.image',
        'is required when [runner] kind = "kubernetes": set image under [runner.kubernetes]',
      ],
      [
        'runner.kubernetes.gateway_address',
        'is required when [runner] kind = "kubernetes": set gateway_address under [runner.kubernetes]',
      ],
    ]);
  });

  it('refuses a gateway name (pods have no DNS), a bad octet, a bad namespace and an unknown kind', () => {
    const at = (key: string, text: string) =>
      problemsOf(text).find((p) => p.key === key)?.problem ?? 'no problem reported';
    expect(
      at('runner.kubernetes.gateway_address', '[runner.kubernetes]\ngateway_address = "gw.svc:80"'),
    ).toMatch(/pods have no DNS/);
    expect(
      at('runner.kubernetes.gateway_address', '[runner.kubernetes]\ngateway_address = "10.0.0.300:80"'),
    ).toMatch(/octet over 255/);
    expect(at('runner.kubernetes.namespace', '[runner.kubernetes]\nnamespace = "Agents"')).toMatch(
      /Kubernetes name/,
    );
    expect(at('runner.kind', '[runner]\nkind = "nomad"')).toMatch(/docker|kubernetes/);
    expect(at('runner.kubernetes.listen_address', '[runner.kubernetes]\nlisten_address = "0.0.0.0"')).toMatch(
      /not a wildcard/,
    );
    expect(
      at('runner.kubernetes.probe_address', '[runner.kubernetes]\nprobe_address = "kubernetes:443"'),
    ).toMatch(/IPv4:port/);
  });
});
