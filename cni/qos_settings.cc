#include "cni/qos_settings.h"

namespace rdmak8s::cni {

std::map<std::string, std::string> RequiredQosSettings(const QosPolicy& qos, const std::string& pf,
                                                 const std::string& dev,
                                                 const std::vector<uint32_t>& ports) {
  std::map<std::string, std::string> by_id;
  for (auto& [setting, value] : QosSettingsFor(qos, pf, dev, ports)) by_id[setting.Key()] = std::move(value);
  return by_id;
}

bool IsNodeWideQosSetting(const std::string& id) {
  auto s = QosSetting::FromKey(id);
  return s.ok() && s->node_wide();
}

bool IsDcbQosSetting(const std::string& id) {
  auto s = QosSetting::FromKey(id);
  return s.ok() && s->dcb();
}

StatusOr<std::string> ReadQosSetting(const QosSettingContext& ctx, const std::string& id) {
  RDMAK8S_ASSIGN_OR_RETURN(QosSetting s, QosSetting::FromKey(id));
  return s.Read(ctx);
}

Status WriteQosSetting(const QosSettingContext& ctx, const std::string& id, const std::string& value) {
  RDMAK8S_ASSIGN_OR_RETURN(QosSetting s, QosSetting::FromKey(id));
  return s.Write(ctx, value);
}

}  // namespace rdmak8s::cni
