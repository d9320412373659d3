import { z } from 'zod';

/** A DNS-1123 label: a namespace's or a RuntimeClass's name. */
const dnsLabel = z
  .string()
  .regex(
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
    'must be a Kubernetes name: lower-case letters, digits and "-", at most 63, starting and ending alphanumeric',
  );

/**
 * `gateway_address`: where the run's pods reach the host's gateway, as an IPv4 address and port. An address,
 * not a name: the pods get no DNS (the NetworkPolicy lets them reach the gateway and nothing else).
 */
export const gatewayAddressSchema = z
  .string()
  .regex(
    /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}):(\d{1,5})$/,
    'must be "IPv4:port" (e.g. "10.96.0.20:8787"): pods have no DNS, so a name would not resolve',
  )
  .refine((s) => {
    const [ip, port] = s.split(':') as [string, string];
    return ip.split('.').every((o) => Number(o) <= 255) && Number(port) >= 1 && Number(port) <= 65_535;
  }, 'has an octet over 255 or a port outside 1-65535');

const labelValue = z
  .string()
  .regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/, 'must be a label value');
const labelKey = z
  .string()
  .regex(/^([a-z0-9.-]{1,253}\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'must be a label key');

/** `[runner.kubernetes]`: where and how agent pods run when `[runner] kind = "kubernetes"`. */
export const kubernetesRunnerConfigSchema = z
  .object({
    namespace: dnsLabel.default('carapace'),
    /** A kubeconfig file; absent: the host's in-cluster service account (it runs as a pod itself). */
    kubeconfig: z.string().min(1).max(4096).optional(),
    /** The kubeconfig's context to use; absent: its current context. */
    context: z.string().min(1).max(253).optional(),
    /** The agent image as the cluster's nodes pull it (a registry reference, not a local Docker tag). */
    image: z
      .string()
      .min(1)
      .max(512)
      .regex(/^[^\s]+$/, 'must be an image reference without spaces')
      .optional(),
    /** A RuntimeClass for the pods (gVisor's `gvisor`, Kata's `kata`); absent: the node's default runtime. */
    runtime_class: dnsLabel.optional(),
    gateway_address: gatewayAddressSchema.optional(),
    /**
     * The host's own address the gateway listens on for the pods (never a wildcard). Absent: the address of
     * `gateway_address` (a host the pods reach directly; in the cluster, the host pod's IP).
     */
    listen_address: z
      .string()
      .regex(/^\d{1,3}(\.\d{1,3}){3}$/, 'must be an IPv4 address of this host (not 0.0.0.0)')
      .refine((s) => !s.startsWith('0.'), 'must be an IPv4 address of this host, not a wildcard (0.0.0.0)')
      .optional(),
    /**
     * `IPv4:port` that any pod without the gateway-only policy would reach (the API server's address, say):
     * the start probe must fail to reach it. Absent: the kubeconfig's server when it is an IP address.
     */
    probe_address: gatewayAddressSchema.optional(),
    /**
     * Labels of the gateway's pods when the gateway runs in the cluster: the NetworkPolicy selects them
     * (a policy's IP rule does not match a Service's address on most network plugins). Absent: the policy
     * allows `gateway_address` by IP (a host outside the cluster).
     */
    gateway_pod_labels: z.record(labelKey, labelValue).optional(),
    resources: z
      .object({
        cpu: z.number().min(0.1).max(64).default(1),
        memory_mb: z.number().int().min(64).max(65_536).default(1_024),
        /** Beside the group and session quotas, for `/tmp` and the socket. */
        scratch_mb: z.number().int().min(16).max(65_536).default(256),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/**
 * `[runner]`: which engine runs the agent's containers. `docker` (the default) is the local engine;
 * `kubernetes` runs each turn as a pod (see DESIGN.md "Kubernetes runner").
 */
export const runnerConfigSchema = z
  .object({
    kind: z.enum(['docker', 'kubernetes']).default('docker'),
    kubernetes: kubernetesRunnerConfigSchema.prefault({}),
  })
  .strict()
  .superRefine((runner, ctx) => {
    if (runner.kind !== 'kubernetes') return;
    for (const key of ['image', 'gateway_address'] as const) {
      if (runner.kubernetes[key] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['kubernetes', key],
          message: `is required when [runner] kind = "kubernetes": set ${key} under [runner.kubernetes]`,
        });
      }
    }
  });

export type RunnerConfig = z.infer<typeof runnerConfigSchema>;
export type KubernetesRunnerConfig = z.infer<typeof kubernetesRunnerConfigSchema>;
