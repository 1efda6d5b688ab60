import { describe, expect, it } from 'vitest';
import { assertTransition, canTransition, IllegalTransitionError, INSTANCE_STATUSES, INSTANCE_TRANSITIONS } from '../../domain/instance-status';

describe('instance status table', () => {
  it('lists every status and only known targets', () => {
    expect(Object.keys(INSTANCE_TRANSITIONS).sort()).toEqual([...INSTANCE_STATUSES].sort());
    for (const targets of Object.values(INSTANCE_TRANSITIONS)) for (const to of targets) expect(INSTANCE_STATUSES).toContain(to);
  });

  it('rejects illegal transitions with a typed error', () => {
    expect(() => assertTransition('deleted', 'running')).toThrow(IllegalTransitionError);
    expect(() => assertTransition('running', 'creating')).toThrow(/running -> creating/);
    expect(() => assertTransition('pending_force_delete', 'pending_delete')).toThrow(IllegalTransitionError);
    expect(() => assertTransition('creating', 'pending_delete')).toThrow(IllegalTransitionError);
  });

  it('lets force cut in from every live status and ends only in deleted', () => {
    for (const status of INSTANCE_STATUSES) {
      if (status === 'deleted' || status === 'pending_force_delete') continue;
      expect(canTransition(status, 'pending_force_delete'), status).toBe(true);
    }
    expect(INSTANCE_TRANSITIONS.deleted).toEqual([]);
    expect(canTransition('deleting', 'deleted')).toBe(true);
  });

  it('sends a failed create to cleanup, as GARM does', () => {
    expect(INSTANCE_TRANSITIONS.error).toContain('pending_delete');
    expect(canTransition('error', 'running')).toBe(false);
  });
});
