# Module manifest of Basil: PowerShell cmdlets over Basil's REST API (IO load balancing and Storage
# Resource Pools for vSphere), usable beside PowerCLI.
@{
    RootModule           = 'Basil.psm1'
    ModuleVersion        = '0.1.0'
    GUID                 = '0a4d3eb7-c92f-454e-ac5a-ccd7943a303c'
    Author               = 'Basil contributors'
    CompanyName          = 'Basil project'
    Copyright            = '(c) Basil contributors. GPL-3.0-or-later.'
    Description          = 'Drive Basil from PowerShell: pods and their imbalance, recommendations, plans of Storage vMotions, Storage Resource Pool trees, placement of new disks and jobs; reuses a PowerCLI Connect-VIServer session.'
    PowerShellVersion    = '5.1'
    CompatiblePSEditions = @('Desktop', 'Core')
    FormatsToProcess     = @('Basil.Format.ps1xml')
    FunctionsToExport    = @(
        'Connect-Basil'
        'Get-BasilPod'
        'Get-BasilRecommendation'
        'New-BasilPlan'
        'Approve-BasilPlan'
        'Start-BasilPlan'
        'Wait-BasilPlan'
        'Stop-BasilPlan'
        'Get-BasilPool'
        'Set-BasilPool'
        'Get-BasilPlacement'
        'Start-BasilJob'
    )
    CmdletsToExport      = @()
    VariablesToExport    = @()
    AliasesToExport      = @()
    PrivateData          = @{
        PSData = @{
            Tags       = @('VMware', 'vSphere', 'PowerCLI', 'Storage', 'StorageVMotion', 'QoS')
            ProjectUri = 'https://github.com/basil-project/basil'
        }
    }
}
