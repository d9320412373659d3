import { ApiException, type NetworkingV1Api } from '@kubernetes/client-node';
import { describeApiError } from './api-errors.ts';
import { gatewayNetworkPolicy, type GatewayPolicyInput } from './pod-spec.ts';

/**
 * Puts the data folder's gateway-only NetworkPolicy in place as the config says now: created, or replaced
 * when an earlier start left one (its gateway address may have changed since). Throws when neither works:
 * without it no run is limited to the gateway.
 */
export async function ensureGatewayPolicy(
  networking: NetworkingV1Api,
  input: GatewayPolicyInput,
): Promise<void> {
  const body = gatewayNetworkPolicy(input);
  const { namespace } = input;
  const name = body.metadata!.name!;
  try {
    try {
      await networking.createNamespacedNetworkPolicy({ namespace, body });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 409)) throw err;
      await networking.replaceNamespacedNetworkPolicy({ namespace, name, body });
    }
  } catch (err) {
    throw new Error(
      `cannot put NetworkPolicy ${name} in place in namespace ${namespace}: ${describeApiError(err)}; ` +
        'without it no run is limited to the gateway, so none starts (grant create and update on networkpolicies)',
      { cause: err },
    );
  }
}
