import type { HostMethods } from '../protocol.ts';
import type { RpcPeer } from '../rpc/peer.ts';

/** The part of the rpc peer the agent's tools and loop use: typed requests and notifications to the host. */
export type HostClient = Pick<RpcPeer<HostMethods>, 'request' | 'notify'>;
