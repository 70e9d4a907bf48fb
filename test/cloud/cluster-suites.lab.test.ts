/**
 * The OAuth suite again, through a cluster: every cloud it starts is two instances (on the
 * suite's private PostgreSQL and redis-server) behind HAProxy, round robin, so consecutive
 * requests of one flow (sign-in, consent, code exchange, refresh) land on different instances.
 */
import { labSuite } from '../helpers/labs';
import { Balancer, clusterPeersMissing, freePort, PrivateRedis } from './cluster-peers';
import { setCluster, setPostgres } from './helpers';
import { PrivatePostgres, postgresMissing } from './postgres';

labSuite('The cloud cluster (PostgreSQL, redis-server, HAProxy)', postgresMissing() ?? clusterPeersMissing())(
  'the cloud suites through a cluster',
  () => {
    const pg = new PrivatePostgres();
    const redis = new PrivateRedis();
    let db = 0;
    setPostgres(pg);
    setCluster({
      // Redis has 16 databases: one per test cloud keeps their rate-limit buckets apart.
      nextRedis: () => `${redis.url}/${++db % 16}`,
      freePort,
      async balancer(port, backends) {
        const b = new Balancer();
        b.port = port;
        await b.start(backends);
        return { url: b.url, stop: () => b.stop() };
      },
    });
    beforeAll(async () => {
      await pg.start();
      await redis.start();
    }, 60_000);
    afterAll(async () => {
      setCluster(undefined);
      setPostgres(undefined);
      await redis.stop();
      await pg.stop();
    });

    describe('OAuth through two instances behind HAProxy', () => {
      require('./oauth.test');
    });
    describe('relay through two instances behind HAProxy', () => {
      require('./relay.test');
    });
  },
);
