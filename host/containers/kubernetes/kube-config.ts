import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubernetesRunnerConfig } from './kubernetes-config.ts';

/**
 * The cluster's connection from `[runner.kubernetes]`: its kubeconfig file (a leading `~/` is the home
 * folder), or the in-cluster service account when none is named (the host runs as a pod itself).
 */
export function loadKubeConfig(config: Pick<KubernetesRunnerConfig, 'kubeconfig' | 'context'>): KubeConfig {
  const kc = new KubeConfig();
  if (config.kubeconfig) {
    const file = config.kubeconfig.startsWith('~/')
      ? path.join(os.homedir(), config.kubeconfig.slice(2))
      : config.kubeconfig;
    kc.loadFromFile(file);
  } else {
    kc.loadFromCluster();
  }
  if (config.context) kc.setCurrentContext(config.context);
  return kc;
}
