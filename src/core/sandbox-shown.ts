/**
 * What every agent sandbox shows of the host, read-only, whatever FIXLOOP_AGENT_SANDBOX_PATHS says
 * (src/agent/sandbox.ts binds them). Here, below both, because config.ts refuses a data dir or work dir
 * inside one of them (the master key and the database would be readable to an agent of the same uid).
 */

/** /etc entries agents and their tools need (name resolution, TLS roots, users, the linker, Debian alternatives). */
export const ETC = ['resolv.conf', 'hosts', 'nsswitch.conf', 'host.conf', 'passwd', 'group', 'localtime', 'ssl', 'ca-certificates', 'ca-certificates.conf', 'alternatives', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'mime.types']

/** Top-level system directories: bound read-only, or recreated as the symlinks they are (merged /usr). */
export const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']

/** Every host path the sandbox always shows the agent. */
export const ALWAYS_SHOWN: readonly string[] = ['/usr', ...SYSTEM_DIRS, ...ETC.map((name) => `/etc/${name}`)]
