import { HubError, type ErrorCode } from '../core/errors';
import { OPERATIONS_BY_NAME } from '../operations/table';
import { hubOf, type ConfigNode } from './config-node';
import { mergeParams, validateParams } from './params';
import type { NodeMessage, NodeRedApi, RedNode } from './red-types';

export const ANNOUNCE_TYPE = 'speakerhub-announce';

/** Announcements a node waits on at once; beyond that new messages are refused (bounded state). */
const MAX_PENDING = 100;
/** How often a pending announcement's status is asked for, besides on every announcement event. */
const POLL_MS = 500;
/** Longest wait for an announcement to be done (a long clip queued behind others). */
const MAX_WAIT_MS = 15 * 60_000;

interface Pending {
  msg: NodeMessage;
  send: (m: NodeMessage) => void;
  done: (e?: Error) => void;
  deadline: number;
  checking: boolean;
}

/** The id an announcement event refers to, whatever the casing the core uses. */
function announcementIdOf(data: unknown): string | undefined {
  if (!data || typeof data !== 'object') return undefined;
  const d = data as Record<string, unknown>;
  const v = d.AnnouncementID ?? d.announcementId ?? d.id;
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

/**
 * `speakerhub-announce`: speaks msg.payload (or plays MediaUrl/PersistentID from an object
 * payload) on the targets chosen in the editor at the announcement volume, through the
 * `announce` operation, and sends the message on once the announcement is done, i.e. the
 * speakers are restored (announcement_status State "done"). The hub answers `announce` at
 * once; the node follows the announcement events and asks announcement_status on each, with
 * a slow poll as a safety net for a lost event stream.
 */
export function registerAnnounceNode(RED: NodeRedApi): void {
  function AnnounceNode(this: RedNode, config: Record<string, unknown>): void {
    RED.nodes.createNode(this, config);
    const pending = new Map<string, Pending>();
    let unsubscribe: (() => void) | undefined;
    let poll: NodeJS.Timeout | undefined;
    const settings = {
      DeviceIDList: config.targets,
      Volume: config.volume,
      Chime: config.chime === true || config.chime === 'true' ? 'true' : undefined,
      Priority: config.priority,
      // interrupt (the default) or duck; DuckLevel and FadeMs only matter with duck.
      Mode: config.mode === 'duck' || config.mode === 'interrupt' ? config.mode : undefined,
      DuckLevel: config.mode === 'duck' ? config.duckLevel : undefined,
      FadeMs: config.mode === 'duck' ? config.fadeMs : undefined,
    };

    const finish = (id: string, p: Pending, err?: Error, status?: Record<string, unknown>) => {
      pending.delete(id);
      if (err) {
        this.status({ fill: 'red', shape: 'ring', text: (err as { code?: string }).code ?? 'error' });
        p.done(err);
      } else {
        this.status(
          pending.size ? { fill: 'blue', shape: 'dot', text: `${pending.size} announcing` } : { fill: 'green', shape: 'dot', text: 'done' },
        );
        p.msg.payload = status;
        p.send(p.msg);
        p.done();
      }
      if (!pending.size) stopFollowing();
    };

    const check = (hub: ConfigNode, id: string) => {
      const p = pending.get(id);
      if (!p || p.checking) return;
      p.checking = true;
      hub.connection.run('announcement_status', { AnnouncementID: id }).then(
        (s) => {
          p.checking = false;
          if (!pending.has(id)) return;
          // The operation's answer and the final status in one: what `announce` answers over
          // REST ({Result, AnnouncementID}) plus State "done", DeviceIDList, Priority.
          if (s.State === 'done') finish(id, p, undefined, { Result: 'true', ...s });
          else if (s.State === 'failed') {
            const code = (typeof s.ErrorCode === 'string' ? s.ErrorCode : 'PlaybackFailed') as ErrorCode;
            finish(id, p, new HubError(code, `The announcement failed: ${String(s.ErrorMessage ?? s.Reason ?? 'no reason given')}`));
          } else if (Date.now() > p.deadline) finish(id, p, new HubError('InternalError', 'The announcement did not finish within 15 minutes.'));
        },
        (e: Error) => {
          p.checking = false;
          if (pending.has(id)) finish(id, p, e);
        },
      );
    };

    const follow = (hub: ConfigNode) => {
      if (unsubscribe) return;
      unsubscribe = hub.connection.follow({
        event: (e) => {
          if (!e.type.startsWith('announce')) return;
          const id = announcementIdOf(e.data);
          if (id !== undefined) check(hub, id);
          else for (const k of pending.keys()) check(hub, k);
        },
      });
      poll = setInterval(() => {
        for (const k of pending.keys()) check(hub, k);
      }, POLL_MS);
    };
    const stopFollowing = () => {
      unsubscribe?.();
      unsubscribe = undefined;
      clearInterval(poll);
      poll = undefined;
    };

    this.on('input', (msg, send, done) => {
      const fail = (e: unknown) => {
        this.status({ fill: 'red', shape: 'ring', text: (e as { code?: string }).code ?? 'error' });
        done(e instanceof Error ? e : new Error(String(e)));
      };
      const hub = hubOf(RED, config.hub);
      if (hub instanceof Error) return fail(hub);
      const op = OPERATIONS_BY_NAME.get('announce');
      if (!op) return fail(new HubError('UnknownOperation', 'This SpeakerHub version has no announce operation.'));
      if (pending.size >= MAX_PENDING)
        return fail(new HubError('InvalidParameter', `More than ${MAX_PENDING} announcements of this node are pending.`));
      let params: Record<string, unknown>;
      try {
        params = mergeParams(op, settings, msg.payload);
        validateParams(op, params);
      } catch (e) {
        return fail(e);
      }
      follow(hub);
      hub.connection.run('announce', params).then(
        (body) => {
          const id = String(body.AnnouncementID);
          const p: Pending = { msg, send: send as (m: NodeMessage) => void, done, deadline: Date.now() + MAX_WAIT_MS, checking: false };
          pending.set(id, p);
          this.status({ fill: 'blue', shape: 'dot', text: `${pending.size} announcing` });
          check(hub, id);
        },
        (e: unknown) => {
          if (!pending.size) stopFollowing();
          fail(e);
        },
      );
    });
    this.on('close', (_removed, done) => {
      stopFollowing();
      pending.clear();
      done();
    });
  }
  RED.nodes.registerType(ANNOUNCE_TYPE, AnnounceNode);
}
