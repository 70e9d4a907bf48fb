/**
 * Every private LAN a test or bench builds, in one place. Jest runs suites side by side, so two
 * labs on one subnet (or one namespace prefix) steal each other's routes: the DLNA lab and the
 * UPnP announcement lab both took 10.231.11 once and failed a CI run. A new lab takes a fresh
 * entry here (plain data, no jest types: bench/dlna.js compiles the DLNA lab with tsc); test/lab-networks.test.ts checks that no two overlap.
 */
export const LAB_NETWORKS = {
  upnp: { prefix: 'shupnp', subnet: '10.231.7' },
  mqttNetwork: { prefix: 'shmqn', subnet: '10.231.9' },
  announceUpnp: { prefix: 'shann', subnet: '10.231.11' },
  /** bench/announce-upnp.js (plain JS, so it spells these out; keep them equal). */
  announceUpnpBench: { prefix: 'shannb', subnet: '10.231.13' },
  dlna: { prefix: 'shdl', subnet: '10.231.15' },
  /** test/dlna/hostile.lab.test.ts: hostile control points beside a real one (issue 32). */
  dlnaHostile: { prefix: 'shdlx', subnet: '10.231.47' },
  /** bench/hostile-lan.js (npm run bench:hostile): the same attacks, measured. */
  dlnaHostileBench: { prefix: 'shdlb', subnet: '10.231.49' },
  /** Per-process /24s inside these /16s (third octet = pid % 250), so parallel runs never meet. */
  airplay: { prefix: 'ap', subnet: '10.213' },
  squeezeboxDiscovery: { prefix: 'sb', subnet: '10.214' },
  /** test/party: the one gmediarender of the every-family party play (the other peers are on loopback). */
  party: { prefix: 'shparty', subnet: '10.231.21' },
  /** test/drivers/upnp/zones.lab.test.ts: two gmediarender renderers, one zone each. */
  upnpZones: { prefix: 'shupz', subnet: '10.231.23' },
  /** test/esphome/mdns.lab.test.ts: the hub's _esphomelib._tcp advertisement, browsed from another namespace. */
  esphome: { prefix: 'shesp', subnet: '10.231.25' },
  /** test/esphome/lan-lab.lab.test.ts: the hub in one namespace, an ESPHome client on "another machine" (issue 32). */
  esphomeLan: { prefix: 'shesl', subnet: '10.231.63' },
  /** test/drivers/mpd/remote.lab.test.ts: an MPD in its own namespace, on "another machine" (issue 31 item 1). */
  mpdRemote: { prefix: 'shmpr', subnet: '10.231.41' },
  /** bench/first-sound.js (plain JS, so it spells these out in bench/first-sound-peers.js; keep them equal): one gmediarender. */
  firstSoundBench: { prefix: 'shfsb', subnet: '10.231.55' },
  /** test/drivers/conformance/upnp.lab.test.ts: the driver conformance suite's gmediarender. */
  conformanceUpnp: { prefix: 'shcfu', subnet: '10.231.61' },
  /** test/dlna/media-server.lab.test.ts: the hub's library as a MediaServer, browsed by GUPnP (issue 28). */
  dlnaMediaServer: { prefix: 'shdms', subnet: '10.231.67' },
  /** test/dlna/ha-replay.lab.test.ts: Home Assistant's dlna_dmr call order, replayed (issue 28). */
  dlnaHaReplay: { prefix: 'shdlh', subnet: '10.231.69' },
  /** test/dlna/upnp-speakers.lab.test.ts: a gmediarender behind the hub, published as renderers. */
  dlnaUpnpSpeakers: { prefix: 'shdlu', subnet: '10.231.71' },
  /** test/drivers/upnp/ghost-playback.lab.test.ts: renderers that hang and come back. */
  upnpGhost: { prefix: 'shupg', subnet: '10.231.73' },
  /** test/dlna/bad-input.lab.test.ts: malformed SOAP, floods and dead subscribers against the renderers. */
  dlnaBadInput: { prefix: 'shdli', subnet: '10.231.75' },
} as const;
