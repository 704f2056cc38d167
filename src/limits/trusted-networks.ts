import { BlockList, isIP } from "node:net";

const MAPPED_IPV4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** The client's address as counters know it: an IPv4-mapped IPv6 address is its IPv4 address. */
export function clientAddress(ip: string): string {
  return MAPPED_IPV4.exec(ip)?.[1] ?? ip;
}

/** `installation.trusted_networks`: IPv4 and IPv6 addresses and CIDR ranges. */
export class TrustedNetworks {
  private readonly list = new BlockList();
  private readonly empty: boolean;

  constructor(networks: readonly string[]) {
    this.empty = networks.length === 0;
    for (const network of networks) {
      const [address = "", bits] = network.split("/");
      const type = isIP(address) === 6 ? "ipv6" : "ipv4";
      if (bits === undefined) this.list.addAddress(address, type);
      else this.list.addSubnet(address, Number(bits), type);
    }
  }

  /** Whether the address is in one of the networks (BlockList matches IPv4-mapped forms both ways). */
  contains(ip: string): boolean {
    if (this.empty) return false;
    const address = clientAddress(ip);
    const family = isIP(address);
    if (family === 0) return false;
    return this.list.check(address, family === 6 ? "ipv6" : "ipv4");
  }
}
