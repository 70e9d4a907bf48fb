/**
 * Suites that run real programs (gmediarender in network namespaces, snapserver/snapclient)
 * must not pass by skipping: a missing install step would look green. When a lab cannot
 * run, its suite fails with the reason, unless SPEAKERHUB_SKIP_LABS=1 asks to skip it.
 */
export function labSuite(name: string, unavailable: string | undefined): jest.Describe {
  if (!unavailable) return describe;
  if (process.env.SPEAKERHUB_SKIP_LABS === '1') {
    console.warn(`${name} skipped (SPEAKERHUB_SKIP_LABS=1): ${unavailable}`);
    return describe.skip;
  }
  return ((title: string) =>
    describe(title, () => {
      test(`${name} can run here`, () => {
        throw new Error(`${name} cannot run: ${unavailable}. Run scripts/install-test-deps.sh (as root), or set SPEAKERHUB_SKIP_LABS=1 to skip.`);
      });
    })) as unknown as jest.Describe;
}
