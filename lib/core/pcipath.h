/* SPDX-License-Identifier: Apache-2.0 */
/* pcipath.h: what sysfs says of the PCIe path from the host to a device
 * (a GPU), as far as it decides whether peer-to-peer traffic between two
 * GPUs goes straight through a switch: Access Control Services (ACS) that
 * redirect peer requests up to the root complex on a bridge of the path,
 * and the device's IOMMU group and its type (passthrough or translated).
 * Nothing here needs a GPU; the extended configuration space that holds ACS
 * can be read by root only, and the text says so where it could not. Files
 * are read through gpuipc_facts_path (the test-only GPUIPC_TEST_SYSROOT). */
#ifndef GPUIPC_PCIPATH_H
#define GPUIPC_PCIPATH_H

#include <stddef.h>

/* The PCIe extended capability that holds ACS, and its control bits that
 * send peer traffic up (PCIe base specification, 7.7.8). */
#define GPUIPC_PCI_EXT_CAP_ACS 0x000d
#define GPUIPC_PCI_ACS_RR 0x0004 /* P2P request redirect */
#define GPUIPC_PCI_ACS_CR 0x0008 /* P2P completion redirect */
#define GPUIPC_PCI_ACS_EC 0x0020 /* P2P egress control */

/* The ACS control word found in a configuration space image of len bytes
 * (the 4096-byte file sysfs gives root; 256 or fewer bytes hold no extended
 * capabilities). Returns 1 with *ctrl set, 0 where there is no ACS
 * capability, -1 where the image is too short to tell. */
int gpuipc_pci_acs_control(const unsigned char *config, size_t len, unsigned *ctrl);

/* One line on the path to the device at bus_id ("0000:65:00.0", or NVML's
 * and CUDA's "00000000:65:00.0"): "IOMMU group 17, type DMA-FQ
 * (translated); ACS redirect on 0000:64:01.0 (request, completion)" or
 * "no IOMMU group (IOMMU off or passthrough); no ACS redirect on 2 bridges".
 * Returns the number of findings that can break peer traffic (a translating
 * IOMMU, each bridge with redirect on). */
int gpuipc_pci_path_describe(const char *bus_id, char *buf, size_t len);

/* The same for the path between two devices (two GPUs of a pair): each
 * one's IOMMU group, and ACS only on the bridges below their common
 * ancestor, on either side, where their peer traffic turns ("0000:03:00.0:
 * IOMMU group 17, type DMA (translated ...); 0000:04:00.0: ...; ACS
 * redirects peer traffic on 0000:02:00.0 (request)"). Returns the number of
 * findings that can break their peer traffic. */
int gpuipc_pci_pair_describe(const char *bus_a, const char *bus_b, char *buf, size_t len);

#endif
