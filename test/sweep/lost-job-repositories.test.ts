/**
 * Which of an organisation's repositories a sweep looks into for lost jobs: those its pools
 * heard from and those lately pushed to, merged by their latest sign of life, bounded.
 */
import { describe, expect, it } from 'vitest';
import { PUSH_KEEPS_JOBS_QUEUED_MS, repositoriesToLookInto, stillUnreadable, UNREADABLE_LEFT_FOR_MS, type LostJobCandidates } from '../../domain/lost-job-repositories';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const ago = (ms: number) => NOW - ms;
const pushedAgo = (repository: string, ms: number) => ({ repository, pushedAt: new Date(ago(ms)).toISOString() });
const pick = (c: Partial<LostJobCandidates>) => repositoriesToLookInto({ org: 'acme', heard: [], pushed: [], lookedInto: new Set(), now: NOW, count: 20, ...c });

describe('repositoriesToLookInto', () => {
  it('puts a repository pushed to after the pools last heard of anything first, merging both sources', () => {
    const picked = pick({
      heard: [
        ['acme/busy', ago(60_000)],
        ['acme/quiet', ago(3_600_000)],
      ],
      pushed: [pushedAgo('acme/new', 30_000), pushedAgo('acme/busy', 120_000), pushedAgo('acme/docs', 7_200_000)],
    });
    expect(picked).toEqual(['acme/new', 'acme/busy', 'acme/quiet', 'acme/docs']);
  });

  it('names a repository once, by its latest sign of life, in the spelling of that source', () => {
    expect(pick({ heard: [['Acme/Busy', ago(600_000)]], pushed: [pushedAgo('acme/busy', 60_000), pushedAgo('acme/other', 300_000)] })).toEqual(['acme/busy', 'acme/other']);
    expect(pick({ heard: [['Acme/Busy', ago(60_000)]], pushed: [pushedAgo('acme/busy', 600_000), pushedAgo('acme/other', 300_000)] })).toEqual(['Acme/Busy', 'acme/other']);
  });

  it('leaves out pushes older than GitHub keeps a job queued, but not a repository the pools heard from', () => {
    const old = PUSH_KEEPS_JOBS_QUEUED_MS + 60_000;
    expect(pick({ pushed: [pushedAgo('acme/stale', old), pushedAgo('acme/fresh', 60_000)] })).toEqual(['acme/fresh']);
    expect(pick({ heard: [['acme/stale', ago(old)]], pushed: [pushedAgo('acme/stale', old)] })).toEqual(['acme/stale']);
  });

  it('keeps to the organisation, skips what this sweep already looked into, and stops at the bound', () => {
    const pushed = Array.from({ length: 30 }, (_, i) => pushedAgo(`acme/repo-${String(i).padStart(2, '0')}`, (i + 1) * 1_000));
    const picked = pick({
      heard: [['other-org/app', ago(1)]],
      pushed: [pushedAgo('ACME/looked', 1), ...pushed, { repository: 'acme/garbled', pushedAt: 'not a time' }],
      lookedInto: new Set(['acme/looked']),
      count: 5,
    });
    expect(picked).toEqual(['acme/repo-00', 'acme/repo-01', 'acme/repo-02', 'acme/repo-03', 'acme/repo-04']);
    expect(pick({ pushed, count: 0 })).toEqual([]);
  });

  it("for an enterprise's pools, takes the repositories they heard from in any organisation, most lately first", () => {
    const heard: LostJobCandidates['heard'] = [
      ['acme/app', ago(60_000)],
      ['globex/api', ago(1_000)],
      ['initech/old', ago(3_600_000)],
      ['not-a-repository', ago(1)],
    ];
    expect(repositoriesToLookInto({ heard, pushed: [], lookedInto: new Set(['acme/app']), now: NOW, count: 20 })).toEqual(['globex/api', 'initech/old']);
    expect(repositoriesToLookInto({ heard, pushed: [], lookedInto: new Set(), now: NOW, count: 2 })).toEqual(['globex/api', 'acme/app']);
  });
});

describe('stillUnreadable', () => {
  it('keeps a refused repository left alone for its while, then lets it be tried again', () => {
    const refused = { 'repo:acme/private': ago(60_000), 'repo:acme/long-ago': ago(UNREADABLE_LEFT_FOR_MS), 'repo:acme/just-now': NOW };
    expect(stillUnreadable(refused, NOW)).toEqual({ 'repo:acme/private': ago(60_000), 'repo:acme/just-now': NOW });
    expect(stillUnreadable(refused, ago(60_000) + UNREADABLE_LEFT_FOR_MS)).toEqual({ 'repo:acme/just-now': NOW });
  });

  it('drops what a last result garbled, so the repository is tried again rather than left alone for ever', () => {
    expect(stillUnreadable({ 'repo:acme/a': 'yesterday', 'repo:acme/b': Number.NaN, 'repo:acme/c': NOW + 3_600_000, 'repo:acme/d': null }, NOW)).toEqual({});
    expect(stillUnreadable(undefined, NOW)).toEqual({});
  });
});
