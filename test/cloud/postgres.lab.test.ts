/**
 * The cloud suites again, on PostgreSQL: a private cluster started here (initdb + pg_ctl
 * on a free loopback port), a fresh database for every cloud. The suites read the engine
 * through onPostgres()/freshDatabase() in helpers.ts.
 */
import { labSuite } from '../helpers/labs';
import { PrivatePostgres, postgresMissing } from './postgres';
import { setPostgres } from './helpers';

labSuite('PostgreSQL', postgresMissing())('the cloud on PostgreSQL', () => {
  const pg = new PrivatePostgres();
  setPostgres(pg);
  beforeAll(() => pg.start(), 60_000);
  afterAll(() => pg.stop());

  describe('storage on PostgreSQL', () => {
    require('./storage.lab.test');
  });
  describe('OAuth on PostgreSQL', () => {
    require('./oauth.test');
  });
  describe('relay on PostgreSQL', () => {
    require('./relay.test');
  });
  describe('command line and SIGKILL on PostgreSQL', () => {
    require('./restart.lab.test');
  });
});
