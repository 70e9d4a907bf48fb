'use strict';
/**
 * The baseline of bench/homebridge.js: a plain hap-nodejs bridge with one Lightbulb whose
 * On/Brightness handlers answer from memory, published on a random port (mDNS on loopback
 * only). argv[2] = path of the hap-nodejs package to use (the one Homebridge itself runs on).
 */
const { mkdtempSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const hap = require(process.argv[2]);
const { Accessory, Bridge, Characteristic, HAPStorage, Service, uuid } = hap;
HAPStorage.setCustomStoragePath(mkdtempSync(join(tmpdir(), 'speakerhub-bench-hap-')));

const bridge = new Bridge('Plain Bridge', uuid.generate('bench:bridge'));
const light = new Accessory('Plain Light', uuid.generate('bench:light'));
const svc = light.addService(Service.Lightbulb, 'Plain Light');
let on = false;
let brightness = 40;
svc
  .getCharacteristic(Characteristic.On)
  .onGet(() => on)
  .onSet((v) => {
    on = !!v;
  });
svc
  .getCharacteristic(Characteristic.Brightness)
  .onGet(() => brightness)
  .onSet((v) => {
    brightness = Number(v);
  });
bridge.addBridgedAccessory(light);
const username = '0E:22:33:44:55:66';
bridge.once('listening', (port) => process.send({ port, username, pid: process.pid }));
bridge.publish({ username, pincode: '031-45-154', port: 0, category: hap.Categories.BRIDGE, bind: ['lo'], advertiser: 'ciao' });
process.on('message', async (m) => {
  if (m === 'stop') {
    await bridge.unpublish();
    process.exit(0);
  }
});
