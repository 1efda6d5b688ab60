/**
 * A JIT config an attempt minted and handed to the provider, sealed. GitHub gives a
 * JIT config out once, so an attempt that finds the machine an earlier one made can
 * only tell the metadata service (where GARM images fetch it) what that attempt minted.
 * It travels in the failed attempt's failure details and in the activity's heartbeats.
 */
export interface MintedCredential {
  sealedJitConfig: string;
  githubRunnerId: number;
}

/** Where an attempt that failed left its minted credential: its failure's details (activities/instance-activities.ts). */
export function mintedIn(details: unknown): MintedCredential | undefined {
  const minted = (details as { minted?: Partial<MintedCredential> } | undefined)?.minted;
  return typeof minted?.sealedJitConfig === 'string' && typeof minted.githubRunnerId === 'number'
    ? { sealedJitConfig: minted.sealedJitConfig, githubRunnerId: minted.githubRunnerId }
    : undefined;
}
