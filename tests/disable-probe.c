/* Built twice: normally and with -DFRAMESCOPE_DISABLE. check-disable.sh looks for the zone
 * names in both binaries: present in the first, absent from the second. */
#include <stdio.h>

#include "framescope.h"

static int work(int n)
{
    FSCOPE_ZONE("probe_zone_alpha");
    int sum = 0;
    for (int i = 0; i < n; i++) {
        FSCOPE_ZONE_L("probe_zone_beta", FSCOPE_LEVEL_INNER);
        sum += i;
    }
    FSCOPE_ZONE_BEGIN("probe_zone_gamma", FSCOPE_LEVEL_PHASE);
    sum *= 2;
    FSCOPE_ZONE_END();
    FSCOPE_THREAD_NAME("probe_thread_delta");
    FSCOPE_FRAME_MARK();
    return sum;
}

int main(void)
{
    printf("%d\n", work(10));
    return 0;
}
